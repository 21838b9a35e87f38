"""Unit: ReFrame's test loading without the stack walk of warnings it ignores
(fabricsuite.checks.rfm_loading)."""

import inspect
import warnings

import pytest
import reframe.core.fields as rfm_fields
import reframe.core.variables as rfm_variables
from reframe.core.warnings import ReframeDeprecationWarning, suppress_deprecations

from fabricsuite.checks import rfm_loading

pytestmark = pytest.mark.unit


def test_installed_where_reframe_calls_it_once():
    rfm_loading.install()
    wrapped = rfm_variables.user_deprecation_warning
    rfm_loading.install()
    assert rfm_variables.user_deprecation_warning is wrapped
    assert all(getattr(module.user_deprecation_warning, "fabricsuite_wrapped", False)
               for module in (rfm_variables, rfm_fields))


def test_an_ignored_deprecation_walks_no_stack(monkeypatch):
    """Inside suppress_deprecations (ReFrame's own, around each test's instantiation) the
    warning returns before inspect.stack(), which read the source of every frame: 60 % of
    `reframe -c checks/ -l` before."""
    rfm_loading.install()

    def refuse(*_args, **_kwargs):
        raise AssertionError("inspect.stack() called for an ignored warning")

    monkeypatch.setattr(inspect, "stack", refuse)
    with suppress_deprecations():
        assert rfm_loading.ignored_now()
        rfm_variables.user_deprecation_warning("the use of 'variables' is deprecated")


def test_a_deprecation_outside_the_suppression_is_still_reported():
    rfm_loading.install()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not rfm_loading.ignored_now()
        rfm_variables.user_deprecation_warning("old name, use the new one")
    assert [str(w.message) for w in caught if w.category is ReframeDeprecationWarning] == [
        "old name, use the new one"]


def test_a_filter_with_a_condition_first_is_left_to_reframe():
    """A filter that ignores only some messages is not an outright ignore: ReFrame decides."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="only this", category=ReframeDeprecationWarning)
        assert not rfm_loading.ignored_now()
