//! Run-time selection of the instruction set, shared by the SOS and FIR kernels.
//!
//! One binary runs on any x86-64 (SSE2 baseline) and picks AVX2+FMA or AVX-512+FMA
//! kernels when the CPU has them (`is_x86_feature_detected!`, cached by std after the
//! first call). Kernels are written once, generic over lane counts and over [`MulAdd`],
//! and instantiated inside `#[target_feature]` functions so the compiler vectorises
//! them for each instruction set; aarch64 builds use the portable instantiation (NEON
//! and FMA are baseline there).

/// The kernel flavours, chosen once at construction by run-time CPU detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// Plain Rust, any target (SSE2 on x86-64, NEON on aarch64 via the compiler).
    Portable,
    /// x86-64 with AVX2 and FMA.
    Avx2,
    /// x86-64 with AVX-512F/VL, AVX2 and FMA.
    Avx512,
}

impl Isa {
    /// The best kernel this CPU runs.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            // The AVX-512 kernels also call the AVX2 ones for 4-lane groups.
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("fma")
            {
                return Isa::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Whether this CPU can run kernel `self`.
    pub fn is_supported(self) -> bool {
        match self {
            Isa::Portable => true,
            Isa::Avx2 => matches!(Isa::detect(), Isa::Avx2 | Isa::Avx512),
            Isa::Avx512 => Isa::detect() == Isa::Avx512,
        }
    }

    /// `self` if this CPU runs it, else the portable kernel.
    pub fn or_portable(self) -> Isa {
        if self.is_supported() {
            self
        } else {
            Isa::Portable
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2+fma",
            Isa::Avx512 => "avx512+fma",
        }
    }
}

/// `a * b + c`, fused or not.
pub trait MulAdd {
    fn f64(a: f64, b: f64, c: f64) -> f64;
    fn f32(a: f32, b: f32, c: f32) -> f32;
}

/// One rounding (`vfmadd` where the target has FMA).
pub struct Fused;

impl MulAdd for Fused {
    #[inline(always)]
    fn f64(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
    #[inline(always)]
    fn f32(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

/// Two roundings: on targets without FMA, `mul_add` would be a slow library call.
pub struct Separate;

impl MulAdd for Separate {
    #[inline(always)]
    fn f64(a: f64, b: f64, c: f64) -> f64 {
        a * b + c
    }
    #[inline(always)]
    fn f32(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
}

/// The multiply-add of the portable kernels: fused on aarch64 (FMA is baseline there).
#[cfg(target_arch = "aarch64")]
pub type PortableMulAdd = Fused;
/// The multiply-add of the portable kernels: separate on x86-64's SSE2 baseline.
#[cfg(not(target_arch = "aarch64"))]
pub type PortableMulAdd = Separate;
