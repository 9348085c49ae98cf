// xbarrier/kernel_signature.hpp - the compile-time check behind typed launches.
//
// xbarrier-build reads each kernel's parameter list from its source and generates a Rust
// launcher typed after it. It appends these checks to the bundle's translation unit, so that
// the compiler that builds the kernel confirms the reading:
//
//   XB_KERNEL_SIGNATURE(name, void(params...))   the kernel's type is exactly this
//   XB_KERNEL_SCALAR_SIZE(type, bytes)           the type has the size its Rust type has
//
// A reading the compiler disagrees with (a macro that changes a type, say) fails the build
// instead of binding arguments the kernel does not take.
#pragma once

namespace xb {
namespace detail {

template <class A, class B>
struct same_type {
  static constexpr bool value = false;
};
template <class A>
struct same_type<A, A> {
  static constexpr bool value = true;
};

}  // namespace detail
}  // namespace xb

#define XB_KERNEL_SIGNATURE(name, type)                                                        \
  static_assert(::xb::detail::same_type<decltype(name), type>::value,                         \
                "xbarrier-build read kernel `" #name "` as " #type " and the compiler sees "  \
                "another type, so its typed launcher would bind the wrong arguments; "         \
                "see docs/typed-launches.md")

#define XB_KERNEL_SCALAR_SIZE(type, bytes)                                                     \
  static_assert(sizeof(type) == (bytes), "xbarrier-build binds `" #type "` as " #bytes        \
                                         " bytes, and this compiler disagrees; "               \
                                         "see docs/typed-launches.md")
