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

/// The environment variable that caps the instruction set: `portable`, `avx2` or
/// `avx512` (a kernel narrower than the CPU's best, never a wider one), read once per
/// process. For measuring on a wide CPU what a narrower one runs (an AVX2-only machine's
/// kernels on an AVX-512 one: `FERROFX_SIMD=avx2 cargo xtask bench --plugin`).
pub const SIMD_CAP_VAR: &str = "FERROFX_SIMD";

/// [`SIMD_CAP_VAR`] as read by the first [`Isa::detect`].
static CAP: std::sync::OnceLock<Option<Isa>> = std::sync::OnceLock::new();

impl Isa {
    /// The kernel FerroFX runs here: the best this CPU has, or the narrower one
    /// [`SIMD_CAP_VAR`] asks for. The first call reads the environment (it allocates):
    /// code on the audio thread calls [`Isa::detect_realtime`] instead.
    pub fn detect() -> Isa {
        let cap = *CAP.get_or_init(|| match std::env::var(SIMD_CAP_VAR) {
            Ok(value) => match Isa::parse_cap(&value) {
                Ok(cap) => cap,
                Err(why) => {
                    // Read once, at the first construction (never on the audio thread).
                    eprintln!("ferrofx: {SIMD_CAP_VAR}={value:?} ignored: {why}");
                    None
                }
            },
            Err(_) => None,
        });
        Isa::cpu().capped(cap)
    }

    /// [`Isa::detect`] without ever reading the environment (no allocation, no lock): the
    /// cap as an earlier `detect` read it (every construction calls it first), else the
    /// CPU's best. For the audio thread.
    pub fn detect_realtime() -> Isa {
        Isa::cpu().capped(CAP.get().copied().flatten())
    }

    /// [`SIMD_CAP_VAR`]'s value: `Some(isa)`, `None` for an empty value.
    pub fn parse_cap(value: &str) -> Result<Option<Isa>, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" => Ok(None),
            "portable" => Ok(Some(Isa::Portable)),
            "avx2" => Ok(Some(Isa::Avx2)),
            "avx512" => Ok(Some(Isa::Avx512)),
            other => Err(format!("{other:?} is not one of portable, avx2, avx512")),
        }
    }

    /// `self` or `cap`, whichever is narrower.
    pub fn capped(self, cap: Option<Isa>) -> Isa {
        let rank = |isa: Isa| match isa {
            Isa::Portable => 0,
            Isa::Avx2 => 1,
            Isa::Avx512 => 2,
        };
        match cap {
            Some(cap) if rank(cap) < rank(self) => cap,
            _ => self,
        }
    }

    /// The best kernel this CPU runs.
    pub fn cpu() -> Isa {
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

    /// Whether this CPU can run kernel `self` (whatever the cap: tests and benchmarks
    /// name a kernel explicitly).
    pub fn is_supported(self) -> bool {
        match self {
            Isa::Portable => true,
            Isa::Avx2 => matches!(Isa::cpu(), Isa::Avx2 | Isa::Avx512),
            Isa::Avx512 => Isa::cpu() == Isa::Avx512,
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

#[cfg(test)]
mod tests {
    use super::Isa;

    #[test]
    fn the_cap_parses_and_only_narrows() {
        assert_eq!(Isa::parse_cap(" AVX2 "), Ok(Some(Isa::Avx2)));
        assert_eq!(Isa::parse_cap("portable"), Ok(Some(Isa::Portable)));
        assert_eq!(Isa::parse_cap("avx512"), Ok(Some(Isa::Avx512)));
        assert_eq!(Isa::parse_cap(""), Ok(None));
        assert!(Isa::parse_cap("sse9").unwrap_err().contains("sse9"));
        for cpu in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
            assert_eq!(cpu.capped(None), cpu);
            assert_eq!(cpu.capped(Some(Isa::Portable)), Isa::Portable);
            assert_eq!(cpu.capped(Some(Isa::Avx512)), cpu, "a cap never widens");
        }
        assert_eq!(Isa::Avx512.capped(Some(Isa::Avx2)), Isa::Avx2);
        assert_eq!(Isa::Avx2.capped(Some(Isa::Avx2)), Isa::Avx2);
        // Once `detect` has read the cap, the audio thread's read agrees with it.
        assert_eq!(Isa::detect_realtime(), Isa::detect());
    }
}
