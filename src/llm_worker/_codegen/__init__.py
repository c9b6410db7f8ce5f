"""Code generation for ``@tool_registry``: introspect → plan → build. Attaching is the caller's.

Imported on the first ``@tool_registry``, so ``import llm_worker`` does not
pay for pydantic's model machinery.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._options import ToolOptions
from .._registry import BuiltTool, declaration_error, qualified_name
from .build import build_registry
from .introspect import MethodSpec, introspect_method
from .plan import plan_registry

__all__ = ["generate"]


def generate(
    cls: type,
    methods: list[tuple[str, Callable[..., Any], ToolOptions]],
    inherited: dict[str, str],
    problems: Sequence[str] = (),
    defining_locals: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[BuiltTool]]:
    """Build every tool of ``cls``, or raise one ``TypeError`` listing every problem.

    ``methods`` are ``(attribute name, function, options)`` in declaration
    order; ``inherited`` maps inherited tool names to their methods;
    ``problems`` were found before (the class's attributes), reported with the rest;
    ``defining_locals`` are the names of the function that defines ``cls``, if one does.
    """
    errors: list[str] = list(problems)
    specs: list[MethodSpec] = []
    for attr_name, func, options in methods:
        spec = introspect_method(cls, attr_name, func, options, errors, defining_locals)
        if spec is None:
            # Still plan its names, so name clashes are reported along with the rest.
            tool_name = options.name if options.name is not None else attr_name
            spec = MethodSpec(attr_name, tool_name, func, (), "", False, options)
        specs.append(spec)
    plan = plan_registry(cls, specs, inherited, errors)
    if errors:
        raise declaration_error(qualified_name(cls), errors)
    return build_registry(plan)
