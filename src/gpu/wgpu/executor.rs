//! [`GpuChain`] as the offload worker's executor: one job, its state in and out.

use super::GpuChain;

impl crate::run::offload::Executor for GpuChain {
    fn execute(&mut self, job: &mut crate::run::offload::Job) -> Result<(), crate::run::offload::ExecError> {
        let n = job.channels * job.frames;
        job.output[..n].copy_from_slice(&job.input[..n]);
        self.process(&mut job.output[..n], job.frames, &mut job.state).map_err(|e| match e {
            crate::gpu::GpuError::DeviceLost { why } => crate::run::offload::ExecError::DeviceLost(why),
            other => crate::run::offload::ExecError::Failed(other.to_string()),
        })
    }
}
