//! A minimal VST3 host on the `vst3` crate's bindings (the ones nice-plug's wrapper is
//! built with): loads a bundle's library, creates and initialises its audio component,
//! sets parameters through the edit controller and processes 32-bit blocks on any bus
//! layout. Used by the sidechain test and the unload test.

use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::null_mut;

use vst3::Steinberg::Vst::{
    AudioBusBuffers, AudioBusBuffers__type0, BusDirections_, IAudioProcessor, IAudioProcessorTrait, IComponent, IComponentTrait,
    IEditController, IEditControllerTrait, MediaTypes_, ParameterInfo, ProcessData, ProcessModes_, ProcessSetup, SpeakerArrangement,
    SymbolicSampleSizes_,
};
use vst3::Steinberg::{kResultOk, IPluginBaseTrait, IPluginFactory, IPluginFactoryTrait, PClassInfo};
use vst3::{ComPtr, Interface};

/// `Steinberg::Vst::SpeakerArr::kStereo`.
pub const STEREO: SpeakerArrangement = 3;

/// One plugin instance behind the host's three interfaces. Fields drop in order: the
/// interfaces before the library that holds their code.
pub struct Vst3Plugin {
    pub controller: ComPtr<IEditController>,
    pub processor: ComPtr<IAudioProcessor>,
    pub component: ComPtr<IComponent>,
    /// Parameter ids by title.
    pub params: HashMap<String, u32>,
    _lib: libloading::Library,
}

fn title(chars: &[u16]) -> String {
    let end = chars.iter().position(|&c| c == 0).unwrap_or(chars.len());
    String::from_utf16_lossy(&chars[..end])
}

impl Vst3Plugin {
    /// Loads the bundle's library, creates its audio component and initialises it.
    pub fn load(bundle: &std::path::Path) -> Vst3Plugin {
        let so = bundle.join("Contents/x86_64-linux/FerroFX.so");
        // SAFETY: loading a shared library runs its initialisers; this is FerroFX's own
        // bundle, built from this workspace.
        let lib = unsafe { libloading::Library::new(&so) }.unwrap_or_else(|e| panic!("{}: {e}", so.display()));
        // SAFETY: the VST3 module entry points on Linux, with the SDK's signatures; the
        // library outlives every object created from it (it is dropped last).
        let factory = unsafe {
            let entry: libloading::Symbol<unsafe extern "C" fn(*mut c_void) -> bool> = lib.get(b"ModuleEntry").expect("ModuleEntry");
            assert!(entry(null_mut()), "ModuleEntry failed");
            let get: libloading::Symbol<unsafe extern "system" fn() -> *mut c_void> = lib.get(b"GetPluginFactory").expect("GetPluginFactory");
            ComPtr::<IPluginFactory>::from_raw(get() as *mut IPluginFactory).expect("a plugin factory")
        };
        // SAFETY: plain COM calls on live objects with out-pointers to locals of the types
        // the SDK declares; every result is checked before use.
        unsafe {
            let mut info: PClassInfo = std::mem::zeroed();
            assert_eq!(factory.getClassInfo(0, &mut info), kResultOk);
            let mut obj: *mut c_void = null_mut();
            let created = factory.createInstance(info.cid.as_ptr(), IComponent::IID.as_ptr() as *const _, &mut obj);
            assert_eq!(created, kResultOk, "createInstance");
            let component = ComPtr::<IComponent>::from_raw(obj as *mut IComponent).expect("an audio component");
            assert_eq!(component.initialize(null_mut()), kResultOk);
            let processor = component.cast::<IAudioProcessor>().expect("IAudioProcessor");
            let controller = component.cast::<IEditController>().expect("IEditController on the component");
            let mut params = HashMap::new();
            for i in 0..controller.getParameterCount() {
                let mut p: ParameterInfo = std::mem::zeroed();
                assert_eq!(controller.getParameterInfo(i, &mut p), kResultOk);
                params.insert(title(&p.title), p.id);
            }
            Vst3Plugin { controller, processor, component, params, _lib: lib }
        }
    }

    /// Sets parameter `name` from a plain value (Hz, dB, Q, an enum's index, 0/1).
    pub fn set_plain(&self, name: &str, plain: f64) {
        let id = *self.params.get(name).unwrap_or_else(|| panic!("no parameter titled {name:?}"));
        // SAFETY: COM calls on the live controller with an id it reported.
        unsafe {
            let normalized = self.controller.plainParamToNormalized(id, plain);
            assert_eq!(self.controller.setParamNormalized(id, normalized), kResultOk, "{name}");
        }
    }

    /// Sets parameter `name` from its normalised value.
    pub fn set_normalized(&self, name: &str, normalized: f64) {
        let id = self.params[name];
        // SAFETY: as in `set_plain`.
        assert_eq!(unsafe { self.controller.setParamNormalized(id, normalized) }, kResultOk, "{name}");
    }

    /// Asks for stereo in, stereo sidechain in, stereo out; true when the plugin takes it.
    pub fn choose_sidechain_layout(&self) -> bool {
        let mut inputs = [STEREO, STEREO];
        let mut outputs = [STEREO];
        // SAFETY: arrays of the lengths passed, alive for the call.
        let ok = unsafe { self.processor.setBusArrangements(inputs.as_mut_ptr(), 2, outputs.as_mut_ptr(), 1) } == kResultOk;
        if ok {
            let (audio, input) = (MediaTypes_::kAudio as i32, BusDirections_::kInput as i32);
            // SAFETY: plain COM calls on the live component.
            unsafe {
                assert_eq!(self.component.getBusCount(audio, input), 2, "two input buses after the arrangement");
                assert_eq!(self.component.activateBus(audio, input, 1, 1), kResultOk, "activating the sidechain bus");
            }
        }
        ok
    }

    /// Processes `main` (and `sidechain`, when given: the second input bus) in blocks of
    /// `block` frames at `fs`; returns the output.
    pub fn run(&self, fs: f64, block: usize, main: &[Vec<f32>], sidechain: Option<&[Vec<f32>]>) -> Vec<Vec<f32>> {
        let frames = main[0].len();
        let mut setup = ProcessSetup {
            processMode: ProcessModes_::kOffline as i32,
            symbolicSampleSize: SymbolicSampleSizes_::kSample32 as i32,
            maxSamplesPerBlock: block as i32,
            sampleRate: fs,
        };
        let mut out = vec![vec![0.0f32; frames]; 2];
        // SAFETY: the buffers handed to `process` are `block`-frame slices of vectors that
        // live across the call, through pointer arrays that do too; the plugin was set up
        // for at most `block` frames at `fs` and activated before, deactivated after.
        unsafe {
            assert_eq!(self.processor.setupProcessing(&mut setup), kResultOk);
            assert_eq!(self.component.setActive(1), kResultOk);
            self.processor.setProcessing(1);
            let mut main_in = [main[0].clone(), main[1].clone()];
            let mut side_in: Vec<Vec<f32>> = sidechain.map_or(Vec::new(), |s| s.to_vec());
            let mut start = 0;
            while start < frames {
                let n = block.min(frames - start);
                let mut main_ptrs: Vec<*mut f32> = main_in.iter_mut().map(|c| c[start..].as_mut_ptr()).collect();
                let mut side_ptrs: Vec<*mut f32> = side_in.iter_mut().map(|c| c[start..].as_mut_ptr()).collect();
                let mut out_ptrs: Vec<*mut f32> = out.iter_mut().map(|c| c[start..].as_mut_ptr()).collect();
                let bus = |ptrs: &mut Vec<*mut f32>| AudioBusBuffers {
                    numChannels: ptrs.len() as i32,
                    silenceFlags: 0,
                    __field0: AudioBusBuffers__type0 { channelBuffers32: ptrs.as_mut_ptr() },
                };
                let mut inputs = vec![bus(&mut main_ptrs)];
                if !side_ptrs.is_empty() {
                    inputs.push(bus(&mut side_ptrs));
                }
                let mut outputs = [bus(&mut out_ptrs)];
                let mut data = ProcessData {
                    processMode: setup.processMode,
                    symbolicSampleSize: setup.symbolicSampleSize,
                    numSamples: n as i32,
                    numInputs: inputs.len() as i32,
                    numOutputs: 1,
                    inputs: inputs.as_mut_ptr(),
                    outputs: outputs.as_mut_ptr(),
                    inputParameterChanges: null_mut(),
                    outputParameterChanges: null_mut(),
                    inputEvents: null_mut(),
                    outputEvents: null_mut(),
                    processContext: null_mut(),
                };
                assert_eq!(self.processor.process(&mut data), kResultOk, "process at frame {start}");
                start += n;
            }
            self.processor.setProcessing(0);
            assert_eq!(self.component.setActive(0), kResultOk);
        }
        out
    }
}

impl Drop for Vst3Plugin {
    fn drop(&mut self) {
        // SAFETY: the component was initialised in `load`; terminate is its counterpart.
        unsafe {
            self.component.terminate();
        }
    }
}
