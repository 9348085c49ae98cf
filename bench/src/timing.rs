//! Timing launches with stream events (never the host clock around asynchronous work).

use xbarrier::{Backend, Result, Stream};

/// Runs `launch` `warmup` times untimed, then `reps` times between two recorded events
/// each; returns the seconds of each timed launch. `launch` enqueues on `stream`.
pub(crate) fn timed<B: Backend>(
    stream: &Stream<B>,
    warmup: u32,
    reps: u32,
    mut launch: impl FnMut() -> Result<()>,
) -> Result<Vec<f64>> {
    for _ in 0..warmup {
        launch()?;
    }
    stream.synchronize()?;
    let mut seconds = Vec::with_capacity(reps as usize);
    for _ in 0..reps {
        let start = stream.record()?;
        launch()?;
        let end = stream.record()?;
        stream.synchronize()?;
        seconds.push(start.elapsed_until(&end)?.as_secs_f64());
    }
    Ok(seconds)
}
