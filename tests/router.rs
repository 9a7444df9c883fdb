//! The CPU/GPU router with a fake cost model: what it chooses, why, and its hysteresis.

use ferrofx::run::router::{Reason, Route, Router, RouterConfig};

const DEADLINE_S: f64 = 0.010;

/// Runs `steps` decisions, feeding one CPU and one GPU measurement from `cost(step)`
/// before each; returns the routes taken.
fn drive(r: &mut Router, steps: usize, cost: impl Fn(usize) -> (f64, f64)) -> Vec<Route> {
    (0..steps)
        .map(|i| {
            let (cpu, gpu) = cost(i);
            r.record_cpu(cpu);
            r.record_gpu(gpu);
            r.decide(DEADLINE_S).route
        })
        .collect()
}

fn switches(routes: &[Route]) -> usize {
    routes.windows(2).filter(|w| w[0] != w[1]).count()
}

#[test]
fn measures_first_then_takes_a_clearly_faster_gpu_after_the_hold() {
    let config = RouterConfig::default();
    let mut r = Router::new(config);
    for _ in 0..config.min_samples - 1 {
        r.record_cpu(0.004);
        r.record_gpu(0.001);
        let d = r.decide(DEADLINE_S);
        assert_eq!((d.route, d.reason), (Route::Cpu, Reason::Measuring));
    }
    let routes = drive(&mut r, 20, |_| (0.004, 0.001));
    let first_gpu = routes.iter().position(|&x| x == Route::Gpu).expect("never chose the GPU");
    assert_eq!(first_gpu + 1, config.hold as usize, "the switch waits exactly `hold` decisions");
    let d = r.decide(DEADLINE_S);
    assert_eq!((d.route, d.reason), (Route::Gpu, Reason::GpuFaster));
    assert!((d.cpu_median_s - 0.004).abs() < 1e-12 && (d.gpu_median_s - 0.001).abs() < 1e-12);
}

#[test]
fn a_gpu_short_of_the_margin_is_not_taken_but_is_kept_once_taken() {
    let mut r = Router::new(RouterConfig::default());
    // 1.2x faster: below the 1.5x margin.
    let routes = drive(&mut r, 40, |_| (0.0012, 0.001));
    assert!(routes.iter().all(|&x| x == Route::Cpu));
    assert_eq!(r.decide(DEADLINE_S).reason, Reason::GpuNotFastEnough);
    // Now clearly faster: switches...
    drive(&mut r, 80, |_| (0.004, 0.001));
    assert_eq!(r.route(), Route::Gpu);
    // ...and back at 1.2x it stays (between the thresholds): no flapping.
    let routes = drive(&mut r, 80, |_| (0.0012, 0.001));
    assert!(routes.iter().all(|&x| x == Route::Gpu));
}

#[test]
fn a_slower_gpu_is_left_after_the_hold_and_brief_spikes_change_nothing() {
    let config = RouterConfig { min_samples: 4, hold: 6, ..RouterConfig::default() };
    let mut r = Router::new(config);
    drive(&mut r, 80, |_| (0.004, 0.001));
    assert_eq!(r.route(), Route::Gpu);
    // A few slow GPU blocks (fewer than `hold` decisions' worth to move the median): stays.
    let routes = drive(&mut r, 3, |_| (0.004, 0.009));
    assert!(routes.iter().all(|&x| x == Route::Gpu));
    // Persistently slower: leaves, and says why.
    let routes = drive(&mut r, 200, |_| (0.002, 0.003));
    assert_eq!(*routes.last().unwrap(), Route::Cpu);
    assert_eq!(switches(&routes), 1);
    assert_eq!(r.decide(DEADLINE_S).reason, Reason::GpuNotFastEnough);
}

#[test]
fn a_tail_past_the_deadline_share_keeps_or_sends_the_stream_to_the_cpu() {
    let mut r = Router::new(RouterConfig::default());
    // Fast median, but every 10th round trip takes 8 ms (> 0.5 x 10 ms).
    let routes = drive(&mut r, 200, |i| (0.004, if i % 10 == 0 { 0.008 } else { 0.0005 }));
    assert!(routes.iter().all(|&x| x == Route::Cpu));
    let d = r.decide(DEADLINE_S);
    assert_eq!(d.reason, Reason::GpuTailTooLong);
    assert!(d.gpu_tail_s > 0.5 * DEADLINE_S && d.gpu_median_s < 0.001);
    // On the GPU, a tail that grows past the deadline share sends it back.
    let mut r = Router::new(RouterConfig::default());
    drive(&mut r, 100, |_| (0.004, 0.001));
    assert_eq!(r.route(), Route::Gpu);
    drive(&mut r, 100, |i| (0.004, if i % 5 == 0 { 0.007 } else { 0.001 }));
    assert_eq!(r.route(), Route::Cpu);
    assert_eq!(r.decide(DEADLINE_S).reason, Reason::GpuTailTooLong);
}

#[test]
fn costs_oscillating_around_the_threshold_do_not_flap() {
    let mut r = Router::new(RouterConfig::default());
    // The GPU alternates between 2x faster and 1.1x slower every 3 blocks.
    let routes = drive(&mut r, 2000, |i| (0.002, if (i / 3) % 2 == 0 { 0.001 } else { 0.0022 }));
    assert!(switches(&routes) <= 1, "{} switches", switches(&routes));
}

#[test]
fn an_unavailable_gpu_means_the_cpu_at_once() {
    let mut r = Router::new(RouterConfig::default());
    drive(&mut r, 100, |_| (0.004, 0.001));
    assert_eq!(r.route(), Route::Gpu);
    r.set_gpu_available(false);
    let d = r.decide(DEADLINE_S);
    assert_eq!((d.route, d.reason), (Route::Cpu, Reason::GpuUnavailable));
    // Offline (no deadline) the tail never disqualifies.
    let mut r = Router::new(RouterConfig::default());
    for i in 0..100 {
        r.record_cpu(1.0);
        r.record_gpu(if i % 10 == 0 { 50.0 } else { 0.1 });
        r.decide(f64::INFINITY);
    }
    assert_eq!(r.route(), Route::Gpu);
}
