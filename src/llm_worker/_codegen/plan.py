"""Stage 2: decide every generated name and check the whole class, building nothing.

``plan_registry`` is pure: given the class and its method specs it returns the
plan (Pascal names, attribute names) and appends any clash to ``errors``.
A name the class already defines is never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass

from .introspect import MethodSpec

__all__ = ["RegistryPlan", "ToolPlan", "generated_names", "pascal_case", "plan_registry"]


@dataclass(frozen=True)
class ToolPlan:
    """The names generated for one tool method."""

    spec: MethodSpec
    args_name: str  # SearchArgs
    tool_class_name: str  # ToolSearch
    definition_name: str  # search_definition

    @property
    def generated_names(self) -> tuple[str, str, str]:
        return (self.args_name, self.tool_class_name, self.definition_name)


@dataclass(frozen=True)
class RegistryPlan:
    """Everything ``build`` will create for one registry class, in declaration order."""

    cls: type
    tools: tuple[ToolPlan, ...]


def pascal_case(snake: str) -> str:
    """``get_user`` → ``GetUser``: split on ``_`` and capitalise each segment."""
    return "".join(segment[:1].upper() + segment[1:] for segment in snake.split("_"))


def generated_names(attr_name: str) -> tuple[str, str, str]:
    """``get_user`` → ``GetUserArgs``, ``ToolGetUser``, ``get_user_definition``."""
    pascal = pascal_case(attr_name)
    return f"{pascal}Args", f"Tool{pascal}", f"{attr_name}_definition"


def plan_registry(
    cls: type,
    specs: list[MethodSpec],
    inherited: dict[str, str],
    errors: list[str],
) -> RegistryPlan:
    """Name everything ``cls`` will get; report duplicate tool names and name clashes.

    ``inherited`` maps the tool names ``cls`` inherits (and does not override)
    to the methods that define them.
    """
    plans: list[ToolPlan] = []
    tool_owner = dict(inherited)
    generated_owner: dict[str, str] = {}
    for spec in specs:
        args_name, tool_class_name, definition_name = generated_names(spec.attr_name)
        plan = ToolPlan(spec, args_name, tool_class_name, definition_name)
        if spec.tool_name in tool_owner:
            errors.append(
                f"{spec.attr_name}: tool name {spec.tool_name!r} is already used by "
                f"{tool_owner[spec.tool_name]} (pass @tool(name=...) to rename one)"
            )
        tool_owner[spec.tool_name] = spec.attr_name
        for name in plan.generated_names:
            if name in cls.__dict__:
                errors.append(
                    f"{spec.attr_name}: cannot generate {name!r}, the class already defines it "
                    f"(rename the method or the attribute)"
                )
            elif name in generated_owner:
                errors.append(
                    f"{spec.attr_name}: generated name {name!r} is also generated for "
                    f"{generated_owner[name]} (rename one of the methods)"
                )
            generated_owner[name] = spec.attr_name
        plans.append(plan)
    return RegistryPlan(cls=cls, tools=tuple(plans))
