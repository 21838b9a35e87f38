"""ReFrame's test loading without the cost of warnings nobody sees.

ReFrame 4.10 (the pinned version) instantiates every test of a loaded check file and, for
each, reads the default of every variable inside `suppress_deprecations()`, the deprecated
`variables` alias of `env_vars` among them. `user_deprecation_warning` first walks the whole
call stack with `inspect.stack()`, which reads source lines of every frame, and only then hands
the warning to `warnings.warn`, whose filter ignores it. Measured here (`reframe -c checks/ -l`,
229 tests): 229 such walks, 60 % of the listing's profile; every ReFrame session of the suite
pays it before its first job (docs/measurements.md, "ReFrame sessions: their fixed cost").

`install()` wraps the function so that it returns at once while ReFrame's deprecation warnings
are ignored by the first filter that applies to them (exactly what `suppress_deprecations` sets:
a bare category filter), and otherwise calls ReFrame's own function unchanged: a deprecation a
check itself triggers is still reported, with its line. `judged_check`, which every check
imports, installs it, so it holds under any configuration that loads the suite's checks.
"""

from __future__ import annotations

import functools
import warnings

import reframe.core.fields as rfm_fields
import reframe.core.variables as rfm_variables
import reframe.core.warnings as rfm_warnings

#: ReFrame's modules that call `user_deprecation_warning` while a test is instantiated: the
#: variables (a deprecated variable's default read) and the fields (a deprecated field set).
CALLERS = (rfm_variables, rfm_fields)


def ignored_now() -> bool:
    """Whether the current warning filters ignore ReFrame's deprecation warnings outright: the
    first filter whose category covers them ignores them, with no message, module or line
    condition. Any other first filter: False (ReFrame's own function then decides)."""
    category = rfm_warnings.ReframeDeprecationWarning
    for action, message, kind, module, lineno in warnings.filters:
        if issubclass(category, kind):
            return action == "ignore" and message is None and module is None and lineno == 0
    return False


def install() -> None:
    """Wraps ReFrame's `user_deprecation_warning` where CALLERS call it (once; installing again
    changes nothing)."""
    original = rfm_warnings.user_deprecation_warning

    @functools.wraps(original)
    def user_deprecation_warning(message, from_version="0.0.0"):
        if ignored_now():
            return None
        return original(message, from_version)

    user_deprecation_warning.fabricsuite_wrapped = True
    for module in CALLERS:
        if not getattr(module.user_deprecation_warning, "fabricsuite_wrapped", False):
            module.user_deprecation_warning = user_deprecation_warning
