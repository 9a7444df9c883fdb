"""A pytest plugin that runs SciPy's own tests of its filtering functions against
FerroFX's: it puts `ferrofx.signal`'s functions in place of SciPy's in the test module
and in `scipy.signal` before the tests run (see test_scipy_suite.py)."""

import scipy.signal
import scipy.signal.tests.test_signaltools as suite

import ferrofx.signal

REPLACED = ["sosfilt", "sosfilt_zi", "sosfiltfilt", "lfilter", "lfilter_zi", "filtfilt"]

for name in REPLACED:
    ours = getattr(ferrofx.signal, name)
    setattr(suite, name, ours)
    setattr(scipy.signal, name, ours)
