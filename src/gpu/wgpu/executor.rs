//! [`WgpuChain`] as the offload worker's executor: one job, its state in and out.

use super::WgpuChain;

impl crate::run::offload::Executor for WgpuChain {
    fn execute(&mut self, job: &mut crate::run::offload::Job) -> Result<(), crate::run::offload::ExecError> {
        let n = job.channels * job.frames;
        job.output[..n].copy_from_slice(&job.input[..n]);
        self.process(&mut job.output[..n], job.frames, &mut job.state).map_err(exec_error)
    }

    fn updates_in_place(&self) -> bool {
        true
    }

    /// The buffers the bind groups point at are rewritten: nothing is rebuilt.
    fn update(&mut self, chain: &crate::chain::DesignedChain) -> Result<(), crate::run::offload::ExecError> {
        self.set_coefficients(chain).map_err(exec_error)
    }
}

fn exec_error(e: crate::gpu::GpuError) -> crate::run::offload::ExecError {
    match e {
        crate::gpu::GpuError::DeviceLost { why } => crate::run::offload::ExecError::DeviceLost(why),
        other => crate::run::offload::ExecError::Failed(other.to_string()),
    }
}
