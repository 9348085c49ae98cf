//! Kernel signatures read from a bundle's sources: the parameter list of every `XB_KERNEL`
//! declaration, for the typed launchers (`launchers.rs`).
//!
//! The reader understands the declarations a kernel's typed launcher can bind: pointers to
//! the element types [`DeviceCopy`](xbarrier_api::DeviceCopy) covers and the scalars
//! [`KernelArg`](xbarrier_api::KernelArg) passes. Anything else (a struct by value, a
//! reference, a template type, a typedef of the user's, a variadic list, a kernel declared
//! inside `#if`) makes the kernel untyped, with the reason, instead of a guess. The reading is
//! then checked by the compiler itself: the build appends `XB_KERNEL_SIGNATURE` for every
//! typed kernel to the bundle's translation unit, so a reading the compiler disagrees with
//! fails the build rather than binding the wrong arguments.

use std::path::{Path, PathBuf};

/// A scalar type: a by-value parameter, or a pointer's element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    /// 8-bit signed.
    I8,
    /// 8-bit unsigned.
    U8,
    /// 16-bit signed.
    I16,
    /// 16-bit unsigned.
    U16,
    /// 32-bit signed.
    I32,
    /// 32-bit unsigned.
    U32,
    /// 64-bit signed.
    I64,
    /// 64-bit unsigned.
    U64,
    /// `float`.
    F32,
    /// `double`.
    F64,
}

impl Scalar {
    /// The Rust type.
    pub fn rust(self) -> &'static str {
        match self {
            Scalar::I8 => "i8",
            Scalar::U8 => "u8",
            Scalar::I16 => "i16",
            Scalar::U16 => "u16",
            Scalar::I32 => "i32",
            Scalar::U32 => "u32",
            Scalar::I64 => "i64",
            Scalar::U64 => "u64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }
    /// Its size in bytes.
    pub fn bytes(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
        }
    }
    /// Whether `KernelArg` passes it by value (it has no 8- or 16-bit scalars).
    pub fn by_value(self) -> bool {
        self.bytes() >= 4
    }
}

/// A C++ scalar type as the source spells it (canonical word order) and what it maps to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CScalar {
    /// The spelling, e.g. `unsigned int`, `uint64_t`, `long`.
    pub spelling: String,
    /// The Rust scalar.
    pub scalar: Scalar,
}

/// One parameter's type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// A scalar by value.
    Value(CScalar),
    /// A pointer to `element`: `&Buffer` where the element is `const`, `&mut Buffer` else.
    Pointer {
        /// The element type.
        element: CScalar,
        /// `const` element.
        constant: bool,
        /// `volatile` element.
        volatile: bool,
    },
    /// `xb::barrier<xb::thread_scope_system>*`: a barrier that host threads share
    /// (`SystemBarrier`), whatever qualifiers the pointer itself has.
    SystemBarrier,
}

/// The spelling of a system barrier parameter's type.
const SYSTEM_BARRIER: &str = "xb::barrier<xb::thread_scope_system>*";
/// Its tokens, as the reader splits them (`::` one token).
const SYSTEM_BARRIER_TOKENS: [&str; 9] = ["xb", "::", "barrier", "<", "xb", "::", "thread_scope_system", ">", "*"];

impl ParamType {
    /// The type as C++ writes it, top-level qualifiers dropped (what the function type holds).
    pub fn c_type(&self) -> String {
        match self {
            ParamType::Value(s) => s.spelling.clone(),
            ParamType::Pointer { element, constant, volatile } => format!(
                "{}{}{}*",
                if *constant { "const " } else { "" },
                if *volatile { "volatile " } else { "" },
                element.spelling
            ),
            ParamType::SystemBarrier => SYSTEM_BARRIER.to_owned(),
        }
    }
    fn scalar(&self) -> Option<&CScalar> {
        match self {
            ParamType::Value(s) | ParamType::Pointer { element: s, .. } => Some(s),
            ParamType::SystemBarrier => None,
        }
    }
    /// The words of its spelling that a macro could redefine.
    fn words(&self) -> Vec<&str> {
        match self {
            ParamType::SystemBarrier => vec!["xb", "barrier", "thread_scope_system"],
            other => other.scalar().map(|s| s.spelling.split(' ').collect()).unwrap_or_default(),
        }
    }
}

/// One parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its name, where the declaration gives one.
    pub name: Option<String>,
    /// Its type.
    pub ty: ParamType,
}

/// A kernel found in a source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelDecl {
    /// The kernel's (`extern "C"`) name.
    pub name: String,
    /// The file and 1-based line of its declaration.
    pub file: PathBuf,
    /// See `file`.
    pub line: usize,
    /// The namespaces it is declared in, as a qualifier (`a::b::`), empty at file scope.
    pub scope: String,
    /// Its parameters, or why the typed launchers cannot bind them.
    pub params: Result<Vec<Param>, String>,
}

impl KernelDecl {
    /// `name(const float* in, unsigned int n)`: the signature as read.
    pub fn c_signature(&self) -> String {
        match &self.params {
            Ok(params) => {
                let list: Vec<String> = params
                    .iter()
                    .map(|p| match &p.name {
                        Some(name) => format!("{} {name}", p.ty.c_type()),
                        None => p.ty.c_type(),
                    })
                    .collect();
                format!("{}({})", self.name, list.join(", "))
            }
            Err(_) => format!("{}(...)", self.name),
        }
    }

    /// The compile-time check appended to the bundle's translation unit (after
    /// `macro_guards`): the kernel's type is the one read, and each scalar has the size its
    /// Rust type has.
    pub fn check(&self) -> Option<String> {
        let params = self.params.as_ref().ok()?;
        let types: Vec<String> = params.iter().map(|p| p.ty.c_type()).collect();
        let mut text = String::new();
        text.push_str(&format!("XB_KERNEL_SIGNATURE({}{}, void({}));\n", self.scope, self.name, types.join(", ")));
        let mut sized: Vec<&CScalar> = Vec::new();
        for scalar in params.iter().filter_map(|p| p.ty.scalar()) {
            if !sized.contains(&scalar) {
                sized.push(scalar);
                text.push_str(&format!("XB_KERNEL_SCALAR_SIZE({}, {});\n", scalar.spelling, scalar.scalar.bytes()));
            }
        }
        Some(text)
    }
}

/// Preprocessor checks that no word of the typed kernels' checks is a macro: a macro would
/// change the kernel and its check alike (`#define size_t float*`), so the check could not
/// catch a misreading. One `#error` per word, naming it.
pub fn macro_guards(kernels: &[KernelDecl]) -> String {
    let mut words: Vec<&str> = Vec::new();
    for kernel in kernels {
        let Ok(params) = &kernel.params else { continue };
        let spellings = params.iter().flat_map(|p| p.ty.words());
        let scope = kernel.scope.split("::");
        for text in ["void", "const", "volatile", kernel.name.as_str()].into_iter().chain(scope).chain(spellings) {
            for word in text.split(' ').filter(|w| !w.is_empty()) {
                if !words.contains(&word) {
                    words.push(word);
                }
            }
        }
    }
    words
        .iter()
        .map(|word| {
            format!(
                "#ifdef {word}\n#error \"xbarrier-build: `{word}` is a macro here, so a typed launcher's signature may not be what the compiler sees; #undef it after the kernels that need it, or declare those kernels inside #if to launch them untyped\"\n#endif\n"
            )
        })
        .collect()
}

/// Every `XB_KERNEL` declared in `text` (the contents of `file`), in order, each name once.
/// A declaration the reader cannot follow at all (no name) is skipped: it names no kernel.
pub fn read_kernels(file: &Path, text: &str) -> Vec<KernelDecl> {
    let tokens = tokenize(text);
    let mut kernels: Vec<KernelDecl> = Vec::new();
    // The enclosing braces, each with the namespace it opens (None for other braces), so
    // that the check can name a kernel declared in a namespace by its qualified name.
    let mut braces: Vec<Option<String>> = Vec::new();
    let mut namespace: Option<String> = None;
    for (at, token) in tokens.iter().enumerate() {
        match token.text.as_str() {
            "namespace" => namespace = Some(String::new()),
            "{" => braces.push(namespace.take()),
            "}" => {
                braces.pop();
            }
            ";" | "=" => namespace = None, // a namespace alias, not a block
            "XB_KERNEL" => {
                let scope: String =
                    braces.iter().flatten().filter(|n| !n.is_empty()).map(|n| format!("{n}::")).collect();
                if let Some(kernel) = read_declaration(file, &tokens, at, scope) {
                    if !kernels.iter().any(|k| k.name == kernel.name) {
                        kernels.push(kernel);
                    }
                }
            }
            text => {
                if let Some(name) = namespace.as_mut() {
                    if text != "inline" {
                        name.push_str(text); // `a`, `::`, `b` of `namespace a::b {`
                    }
                }
            }
        }
    }
    kernels
}

#[derive(Clone, Debug)]
struct Token {
    text: String,
    line: usize,
    /// How many `#if`/`#ifdef`/`#ifndef` blocks enclose it.
    conditional: usize,
}

/// Tokens of the source outside comments, literals and preprocessor directives.
fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let (mut i, mut line, mut conditional) = (0, 1, 0usize);
    let mut line_start = true;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            line_start = true;
            i += 1;
        } else if c == '\\' && next == Some('\n') {
            line += 1;
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                line += usize::from(chars[i] == '\n');
                i += 1;
            }
            i += 2;
        } else if c == '#' && line_start {
            // A directive, with its continuation lines: tracked for #if nesting, else skipped.
            let mut directive = String::new();
            while i < chars.len() && chars[i] != '\n' {
                if chars[i] == '\\' && chars.get(i + 1) == Some(&'\n') {
                    line += 1;
                    i += 2;
                    continue;
                }
                if chars[i] == '/' && chars.get(i + 1) == Some(&'/') {
                    while i < chars.len() && chars[i] != '\n' {
                        i += 1;
                    }
                    break;
                }
                directive.push(chars[i]);
                i += 1;
            }
            let word: String = directive[1..].trim_start().chars().take_while(|c| c.is_ascii_alphabetic()).collect();
            match word.as_str() {
                "if" | "ifdef" | "ifndef" => conditional += 1,
                "endif" => conditional = conditional.saturating_sub(1),
                _ => {}
            }
        } else if c == 'R' && next == Some('"') {
            // A raw string literal R"delim( ... )delim": skipped whole, quotes and all.
            let open: String = chars[i + 2..].iter().take_while(|&&c| c != '(' && c != '\n').collect();
            let close: Vec<char> = format!("){open}\"").chars().collect();
            i += 2 + open.len() + 1;
            while i < chars.len() && !chars[i..].starts_with(&close) {
                line += usize::from(chars[i] == '\n');
                i += 1;
            }
            i += close.len();
            line_start = false;
        } else if c == '"' || c == '\'' {
            // A literal: skipped, escapes included.
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' {
                    i += 1;
                }
                line += usize::from(chars.get(i) == Some(&'\n'));
                i += 1;
            }
            i += 1;
            line_start = false;
        } else {
            let start = i;
            if c.is_ascii_alphabetic() || c == '_' {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            } else if c.is_ascii_digit() {
                // Digits, suffixes, a decimal point and C++14 digit separators (1'000).
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric()
                        || chars[i] == '.'
                        || (chars[i] == '\'' && chars.get(i + 1).is_some_and(char::is_ascii_alphanumeric)))
                {
                    i += 1;
                }
            } else if (c == ':' && next == Some(':')) || (c == '&' && next == Some('&')) {
                i += 2;
            } else if c == '.' && next == Some('.') && chars.get(i + 2) == Some(&'.') {
                i += 3;
            } else {
                i += 1;
            }
            tokens.push(Token { text: chars[start..i].iter().collect(), line, conditional });
            line_start = false;
        }
    }
    tokens
}

fn is_identifier(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

/// Past the attributes and specifiers that may sit between `XB_KERNEL`, `void` and the name.
fn skip_decorations(tokens: &[Token], mut at: usize) -> usize {
    loop {
        match tokens.get(at).map(|t| t.text.as_str()) {
            Some("__launch_bounds__" | "__attribute__" | "__declspec" | "alignas") => {
                at = skip_group(tokens, at + 1);
            }
            Some("[") if tokens.get(at + 1).is_some_and(|t| t.text == "[") => {
                while at < tokens.len()
                    && !(tokens[at].text == "]" && tokens.get(at + 1).is_some_and(|t| t.text == "]"))
                {
                    at += 1;
                }
                at += 2;
            }
            Some(
                "__noinline__" | "__forceinline__" | "inline" | "static" | "__global__" | "__host__" | "__device__",
            ) => at += 1,
            _ => return at,
        }
    }
}

/// Past a parenthesized group starting at `at` (nothing to skip if none starts there).
fn skip_group(tokens: &[Token], at: usize) -> usize {
    if tokens.get(at).is_none_or(|t| t.text != "(") {
        return at;
    }
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(at) {
        match token.text.as_str() {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

fn read_declaration(file: &Path, tokens: &[Token], at: usize, scope: String) -> Option<KernelDecl> {
    let start = &tokens[at];
    let mut i = skip_decorations(tokens, at + 1);
    let returns = tokens.get(i)?.text.clone();
    i = skip_decorations(tokens, i + 1);
    let name = tokens.get(i)?;
    if !is_identifier(&name.text) || tokens.get(i + 1)?.text != "(" {
        return None;
    }
    let close = skip_group(tokens, i + 1);
    let inside = &tokens[i + 2..close.saturating_sub(1).max(i + 2)];
    let params = if returns != "void" {
        Err(format!("it returns `{returns}`, not void"))
    } else if start.conditional > 0 {
        Err("it is declared inside a preprocessor conditional (#if, #ifdef, #ifndef), and typed launchers are the same for every backend".to_owned())
    } else {
        read_params(inside)
    };
    Some(KernelDecl { name: name.text.clone(), file: file.to_path_buf(), line: start.line, scope, params })
}

fn read_params(tokens: &[Token]) -> Result<Vec<Param>, String> {
    let texts: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
    if texts.is_empty() || texts == ["void"] {
        return Ok(Vec::new());
    }
    let mut params = Vec::new();
    let mut depth = 0i32;
    let mut current: Vec<&str> = Vec::new();
    for text in texts.iter().copied().chain([","]) {
        match text {
            "(" | "<" | "[" | "{" => depth += 1,
            ")" | ">" | "]" | "}" => depth -= 1,
            _ => {}
        }
        if text == "," && depth <= 0 {
            let index = params.len();
            params.push(
                read_param(&current)
                    .map_err(|why| format!("parameter {} (`{}`) {why}", index + 1, current.join(" ")))?,
            );
            current.clear();
        } else {
            current.push(text);
        }
    }
    if depth != 0 {
        return Err("has unbalanced brackets (a `<` or `>` in a default argument, say)".to_owned());
    }
    Ok(params)
}

/// What follows `xb::barrier<xb::thread_scope_system>*` (a leading `::` allowed), pointer
/// qualifiers dropped, where the parameter is one.
fn system_barrier_declarator<'t>(tokens: &'t [&'t str]) -> Option<Vec<&'t str>> {
    let tokens = tokens.strip_prefix(&["::"]).unwrap_or(tokens);
    let rest = tokens.strip_prefix(&SYSTEM_BARRIER_TOKENS[..])?;
    Some(rest.iter().copied().filter(|t| !QUALIFIERS.contains(t)).collect())
}

/// Words that name (part of) a C++ type: a lone one is no parameter name.
const TYPE_WORDS: [&str; 9] = ["void", "char", "short", "int", "long", "signed", "unsigned", "float", "double"];
const QUALIFIERS: [&str; 5] = ["const", "volatile", "__restrict__", "__restrict", "restrict"];

fn read_param(tokens: &[&str]) -> Result<Param, String> {
    let mut tokens = tokens.to_vec();
    if let Some(default) = tokens.iter().position(|t| *t == "=") {
        tokens.truncate(default); // a default argument: the launcher passes every argument anyway
    }
    if let Some(rest) = system_barrier_declarator(&tokens) {
        return match rest.as_slice() {
            [] => Ok(Param { name: None, ty: ParamType::SystemBarrier }),
            [name] if is_identifier(name) => Ok(Param { name: Some((*name).to_owned()), ty: ParamType::SystemBarrier }),
            _ => Err(format!("has `{}` after `{SYSTEM_BARRIER}` where the reader expects the name", rest.join(" "))),
        };
    }
    for (token, why) in [
        ("...", "is variadic"),
        ("&", "is a reference"),
        ("&&", "is a reference"),
        ("<", "has a template type"),
        ("[", "is an array"),
        ("(", "is a function pointer or has a parenthesized declarator"),
    ] {
        if tokens.contains(&token) {
            return Err(why.to_owned());
        }
    }
    for keyword in ["struct", "class", "union", "enum"] {
        if tokens.contains(&keyword) {
            return Err(format!("is a {keyword} type: typed launchers pass scalars and pointers to them"));
        }
    }
    let stars = tokens.iter().filter(|t| **t == "*").count();
    if stars > 1 {
        return Err("is a pointer to a pointer".to_owned());
    }
    let (base, declarator) = match tokens.iter().position(|t| *t == "*") {
        Some(star) => (&tokens[..star], &tokens[star + 1..]),
        None => (&tokens[..], &tokens[tokens.len()..]),
    };
    let mut constant = false;
    let mut volatile = false;
    let mut words: Vec<&str> = Vec::new();
    let mut k = 0;
    while k < base.len() {
        match base[k] {
            "const" => constant = true,
            "volatile" => volatile = true,
            "std" if base.get(k + 1) == Some(&"::") => k += 1,
            "::" => {}
            word => words.push(word),
        }
        k += 1;
    }
    let mut name = None;
    if stars == 0 {
        // `unsigned n`, `uint32_t n`: the last word names the parameter unless it is part of the type.
        if words.len() >= 2 && !TYPE_WORDS.contains(words.last().unwrap_or(&"")) {
            name = words.pop().map(str::to_owned);
        }
    } else {
        for token in declarator {
            if QUALIFIERS.contains(token) {
                continue;
            }
            if name.is_none() && is_identifier(token) {
                name = Some((*token).to_owned());
            } else {
                return Err(format!("has `{token}` where the reader expects a qualifier or the name"));
            }
        }
    }
    let scalar = scalar_of(&words)?;
    if stars == 1 {
        Ok(Param { name, ty: ParamType::Pointer { element: scalar, constant, volatile } })
    } else if !scalar.scalar.by_value() {
        Err(format!(
            "is a {}-bit scalar by value; typed launchers pass 32- and 64-bit scalars",
            scalar.scalar.bytes() * 8
        ))
    } else if volatile {
        Err("is a volatile scalar".to_owned())
    } else {
        Ok(Param { name, ty: ParamType::Value(scalar) })
    }
}

/// The scalar a list of type words names: the fundamental types in any order, and the
/// fixed-width aliases of `<stdint.h>`.
fn scalar_of(words: &[&str]) -> Result<CScalar, String> {
    let make = |spelling: &str, scalar| Ok(CScalar { spelling: spelling.to_owned(), scalar });
    if let [alias] = words {
        let fixed = match *alias {
            "int8_t" => Some(Scalar::I8),
            "uint8_t" => Some(Scalar::U8),
            "int16_t" => Some(Scalar::I16),
            "uint16_t" => Some(Scalar::U16),
            "int32_t" => Some(Scalar::I32),
            "uint32_t" => Some(Scalar::U32),
            "int64_t" => Some(Scalar::I64),
            "uint64_t" | "size_t" => Some(Scalar::U64),
            "ptrdiff_t" => Some(Scalar::I64),
            _ => None,
        };
        if let Some(scalar) = fixed {
            return make(alias, scalar);
        }
    }
    let count = |w: &str| words.iter().filter(|x| **x == w).count();
    let (signed, unsigned, short, long) = (count("signed"), count("unsigned"), count("short"), count("long"));
    let (int, char, float, double, void) =
        (count("int"), count("char"), count("float"), count("double"), count("void"));
    let known = signed + unsigned + short + long + int + char + float + double + void;
    if known != words.len() || words.is_empty() {
        let unknown: Vec<&str> = words.iter().copied().filter(|w| !TYPE_WORDS.contains(w)).collect();
        return Err(format!(
            "has the type `{}`, which the reader does not know (it reads the fundamental types and int8_t..uint64_t, size_t, ptrdiff_t; a typedef of your own is not followed)",
            if unknown.is_empty() { words.join(" ") } else { unknown.join(" ") }
        ));
    }
    let u = unsigned == 1;
    match (signed + unsigned, short, long, int, char, float, double, void) {
        (0, 0, 0, 0, 0, 1, 0, 0) => make("float", Scalar::F32),
        (0, 0, 0, 0, 0, 0, 1, 0) => make("double", Scalar::F64),
        (0, 0, 0, 0, 0, 0, 0, 1) => Err("points to void: declare the pointer with its element type".to_owned()),
        (0, 0, 0, 0, 1, 0, 0, 0) => Err(
            "is plain char, whose signedness depends on the target: use signed char, unsigned char, int8_t or uint8_t"
                .to_owned(),
        ),
        (1, 0, 0, 0, 1, 0, 0, 0) => {
            make(if u { "unsigned char" } else { "signed char" }, if u { Scalar::U8 } else { Scalar::I8 })
        }
        (_, 1, 0, 0 | 1, 0, 0, 0, 0) if signed + unsigned <= 1 => {
            make(if u { "unsigned short" } else { "short" }, if u { Scalar::U16 } else { Scalar::I16 })
        }
        (_, 0, 0, 0 | 1, 0, 0, 0, 0) if signed + unsigned <= 1 => {
            make(if u { "unsigned int" } else { "int" }, if u { Scalar::U32 } else { Scalar::I32 })
        }
        (_, 0, 1, 0 | 1, 0, 0, 0, 0) if signed + unsigned <= 1 => {
            make(if u { "unsigned long" } else { "long" }, if u { Scalar::U64 } else { Scalar::I64 })
        }
        (_, 0, 2, 0 | 1, 0, 0, 0, 0) if signed + unsigned <= 1 => {
            make(if u { "unsigned long long" } else { "long long" }, if u { Scalar::U64 } else { Scalar::I64 })
        }
        _ => Err(format!("has the type `{}`, which is not one C++ type", words.join(" "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<KernelDecl> {
        read_kernels(Path::new("k.cpp"), text)
    }

    fn signature(text: &str) -> String {
        let kernels = read(text);
        assert_eq!(kernels.len(), 1, "{kernels:?}");
        match &kernels[0].params {
            Ok(_) => kernels[0].c_signature(),
            Err(why) => format!("untyped: {why}"),
        }
    }

    #[test]
    fn reads_pointers_and_scalars() {
        let text = "#include <xbarrier/barrier.hpp>\n\n// a comment XB_KERNEL void not_me(int);\nXB_KERNEL void stream_in(const float* in, float* __restrict__ out, unsigned n) {\n  out[0] = in[0];\n}\n";
        let kernels = read(text);
        assert_eq!(kernels.len(), 1);
        assert_eq!((kernels[0].name.as_str(), kernels[0].line), ("stream_in", 4));
        assert_eq!(kernels[0].c_signature(), "stream_in(const float* in, float* out, unsigned int n)");
        let params = kernels[0].params.as_ref().expect("typed");
        assert_eq!(
            params[0].ty,
            ParamType::Pointer {
                element: CScalar { spelling: "float".into(), scalar: Scalar::F32 },
                constant: true,
                volatile: false
            }
        );
        assert_eq!(params[2].ty, ParamType::Value(CScalar { spelling: "unsigned int".into(), scalar: Scalar::U32 }));
    }

    #[test]
    fn reads_every_spelling_of_the_scalars() {
        for (decl, want) in [
            ("int a", "int a"),
            ("signed a", "int a"),
            ("const int a", "int a"),
            ("unsigned int a", "unsigned int a"),
            ("int unsigned a", "unsigned int a"),
            ("long long a", "long long a"),
            ("unsigned long long int a", "unsigned long long a"),
            ("long a", "long a"),
            ("unsigned long a", "unsigned long a"),
            ("std::uint32_t a", "uint32_t a"),
            ("size_t a", "size_t a"),
            ("ptrdiff_t", "ptrdiff_t"),
            ("double", "double"),
            ("uint64_t", "uint64_t"),
            ("const unsigned char* bytes", "const unsigned char* bytes"),
            ("signed char* bytes", "signed char* bytes"),
            ("short* s", "short* s"),
            ("volatile unsigned* flags", "volatile unsigned int* flags"),
            ("const volatile int16_t* const p", "const volatile int16_t* p"),
            ("float const* p", "const float* p"),
            ("float* __restrict p = nullptr", "float* p"),
        ] {
            assert_eq!(signature(&format!("XB_KERNEL void k({decl}) {{}}")), format!("k({want})"), "{decl}");
        }
        assert_eq!(signature("XB_KERNEL void k(void) {}"), "k()");
        assert_eq!(signature("XB_KERNEL void k() {}"), "k()");
    }

    #[test]
    fn attributes_and_line_continuations_are_skipped() {
        let text = "XB_KERNEL void __launch_bounds__(256, 2) tuned(\n  double* out,\n  unsigned n);\nXB_KERNEL __attribute__((used)) void [[maybe_unused]] other(int x) {}\n";
        let kernels = read(text);
        assert_eq!(
            kernels.iter().map(KernelDecl::c_signature).collect::<Vec<_>>(),
            ["tuned(double* out, unsigned int n)", "other(int x)"]
        );
    }

    #[test]
    fn a_system_barrier_pointer_is_read_as_one() {
        for decl in [
            "xb::barrier<xb::thread_scope_system>* bar",
            "::xb::barrier<xb::thread_scope_system>* __restrict__ bar",
            "xb::barrier<xb::thread_scope_system>*",
        ] {
            let kernels = read(&format!("XB_KERNEL void k({decl}, unsigned n) {{}}"));
            let params = kernels[0].params.as_ref().unwrap_or_else(|why| panic!("{decl}: {why}"));
            assert_eq!(params[0].ty, ParamType::SystemBarrier, "{decl}");
            assert_eq!(params[0].ty.c_type(), "xb::barrier<xb::thread_scope_system>*");
            assert_eq!(params[0].name.as_deref(), decl.ends_with("bar").then_some("bar"), "{decl}");
        }
    }

    #[test]
    fn what_it_cannot_bind_is_untyped_with_the_reason() {
        for (decl, why) in [
            ("struct params p", "struct type"),
            ("params p", "does not know"),
            ("my_float* p", "does not know"),
            ("int& r", "reference"),
            ("float** pp", "pointer to a pointer"),
            ("const void* p", "void"),
            ("char* s", "plain char"),
            ("int n, ...", "variadic"),
            ("short s", "16-bit scalar by value"),
            ("unsigned char c", "8-bit scalar by value"),
            ("bool b", "does not know"),
            ("std::array<int, 4> a", "template"),
            ("xb::barrier<xb::thread_scope_block>* b", "template"),
            ("xb::barrier<xb::thread_scope_system, step>* b", "template"),
            ("xb::barrier<xb::thread_scope_system> b", "template"),
            ("xb::barrier<xb::thread_scope_system>* b c", "expects the name"),
            ("float a[4]", "array"),
            ("void (*f)(int)", "function pointer"),
            ("long long long x", "not one C++ type"),
            ("unsigned signed x", "not one C++ type"),
        ] {
            let got = signature(&format!("XB_KERNEL void k({decl}) {{}}"));
            assert!(got.starts_with("untyped: ") && got.contains(why), "{decl}: {got}");
        }
        assert!(signature("XB_KERNEL int k() {}").contains("returns `int`"));
    }

    #[test]
    fn kernels_inside_conditionals_comments_strings_and_macros_are_not_read_as_typed() {
        let text = r#"
#if defined(XB_PLATFORM_CUDA)
XB_KERNEL void cuda_only(float* p) {}
#endif
#define DEFINE_KERNEL(name) \
  XB_KERNEL void name(float* p) {}
/* XB_KERNEL void commented(int x); */
const char* s = "XB_KERNEL void quoted(int x)";
XB_KERNEL void plain(int x) {}
XB_KERNEL void plain(int x);
"#;
        let kernels = read(text);
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["cuda_only", "plain"], "each name once; nothing from comments, strings or #define");
        assert!(kernels[0].params.as_ref().is_err_and(|why| why.contains("preprocessor conditional")));
        assert!(kernels[1].params.is_ok());
    }

    #[test]
    fn raw_strings_unbalanced_brackets_and_namespaces() {
        let text = "const char* s = R\"x( XB_KERNEL void fake(double* p) {} )x\";\n\
                    XB_KERNEL void fake(float* p) {}\n\
                    XB_KERNEL void odd(int n = 1 < 2, float* p) {}\n\
                    namespace outer { inline namespace v1 { XB_KERNEL void inner(int x) {} } }\n\
                    namespace alias = outer;\n\
                    XB_KERNEL void after(int x) {}\n";
        let kernels = read(text);
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["fake", "odd", "inner", "after"], "nothing from inside the raw string");
        assert_eq!(kernels[0].c_signature(), "fake(float* p)");
        assert!(kernels[1].params.as_ref().is_err_and(|why| why.contains("unbalanced")), "{:?}", kernels[1]);
        assert_eq!((kernels[2].scope.as_str(), kernels[3].scope.as_str()), ("outer::v1::", ""));
    }

    #[test]
    fn the_check_names_the_type_and_every_scalar_size() {
        let kernels = read("XB_KERNEL void k(const float* in, float* out, long n, unsigned m) {}");
        assert_eq!(
            kernels[0].check().expect("typed"),
            "XB_KERNEL_SIGNATURE(k, void(const float*, float*, long, unsigned int));\n\
             XB_KERNEL_SCALAR_SIZE(float, 4);\n\
             XB_KERNEL_SCALAR_SIZE(long, 8);\n\
             XB_KERNEL_SCALAR_SIZE(unsigned int, 4);\n"
        );
        assert!(read("XB_KERNEL void k(struct s x) {}")[0].check().is_none());
        let guards = macro_guards(&kernels);
        for word in ["void", "const", "volatile", "k", "float", "long", "unsigned", "int"] {
            assert_eq!(guards.matches(&format!("#ifdef {word}\n")).count(), 1, "{word}: {guards}");
        }
        let scoped = read("namespace a { namespace b { XB_KERNEL void k(int x) {} } }");
        assert_eq!(scoped[0].check().expect("typed").lines().next(), Some("XB_KERNEL_SIGNATURE(a::b::k, void(int));"));
        assert!(macro_guards(&scoped).contains("#ifdef b\n"));
    }
}
