//! Places kernel arguments the way the C calling convention does, for `xb_host_invoke`.
//!
//! x86-64 System V and AArch64 both pass integer/pointer and floating-point arguments in two
//! independent register sequences and put what does not fit on the stack in parameter
//! order, one 8-byte slot each. `xb_host_invoke` calls the kernel through a prototype of
//! 6 integers, 8 doubles and 10 further integers, which fills exactly those places.

use xbarrier_api::{Error, KernelArg, Result};

use crate::abi::{MAX_FLOAT_ARGS, MAX_INT_ARGS, MAX_STACK_ARGS};

/// Integer registers of the calling convention (AArch64 has two more than the prototype's
/// first six, which its first two "stack" integers then occupy).
#[cfg(target_arch = "x86_64")]
const INT_REGISTERS: usize = 6;
#[cfg(target_arch = "aarch64")]
const INT_REGISTERS: usize = 8;

/// Argument values in the order `xb_host_invoke` takes them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArgRegisters {
    pub ints: [u64; MAX_INT_ARGS],
    pub floats: [f64; MAX_FLOAT_ARGS],
    pub stack: [u64; MAX_STACK_ARGS],
}

/// Lays out `args`, or refuses a list the prototype cannot carry.
pub fn marshal(args: &[KernelArg]) -> Result<ArgRegisters> {
    let mut regs = ArgRegisters::default();
    let (mut ints, mut floats) = (0usize, 0usize);
    // Stack slots that registers beyond the prototype's first six integers occupy.
    let mut spilled = INT_REGISTERS - MAX_INT_ARGS;
    let too_many = || {
        Error::InvalidArgument {
        call: "launch",
        reason: format!(
            "{} kernel arguments: the host backend passes at most {} integer/pointer and {} floating-point arguments in registers plus {} more",
            args.len(),
            INT_REGISTERS,
            MAX_FLOAT_ARGS,
            MAX_STACK_ARGS - (INT_REGISTERS - MAX_INT_ARGS)
        ),
    }
    };
    for &arg in args {
        if arg.is_float() {
            if floats < MAX_FLOAT_ARGS {
                regs.floats[floats] = f64::from_bits(arg.bits());
                floats += 1;
                continue;
            }
        } else if ints < INT_REGISTERS {
            if ints < MAX_INT_ARGS {
                regs.ints[ints] = arg.bits();
            } else {
                regs.stack[ints - MAX_INT_ARGS] = arg.bits();
            }
            ints += 1;
            continue;
        }
        if spilled == MAX_STACK_ARGS {
            return Err(too_many());
        }
        regs.stack[spilled] = arg.bits();
        spilled += 1;
    }
    Ok(regs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_arguments_fill_both_sequences() {
        let regs =
            marshal(&[KernelArg::Ptr(7), KernelArg::F32(1.0), KernelArg::U32(3), KernelArg::F64(2.0)]).expect("fits");
        assert_eq!(&regs.ints[..2], &[7, 3]);
        assert_eq!(regs.floats[0].to_bits(), 0x3f80_0000);
        assert_eq!(regs.floats[1], 2.0);
    }

    #[test]
    fn overflow_goes_to_the_stack_in_parameter_order() {
        let mut args: Vec<KernelArg> = (0..INT_REGISTERS as u64).map(KernelArg::U64).collect();
        args.push(KernelArg::U64(100));
        args.extend((0..9).map(|i| KernelArg::F64(f64::from(i))));
        args.push(KernelArg::U64(101));
        let regs = marshal(&args).expect("fits");
        let first = INT_REGISTERS - MAX_INT_ARGS;
        assert_eq!(regs.stack[first], 100);
        assert_eq!(regs.stack[first + 1], 8f64.to_bits());
        assert_eq!(regs.stack[first + 2], 101);
    }

    #[test]
    fn too_many_is_an_error() {
        let args: Vec<KernelArg> = (0..40).map(KernelArg::U64).collect();
        assert!(matches!(marshal(&args), Err(Error::InvalidArgument { .. })));
    }
}
