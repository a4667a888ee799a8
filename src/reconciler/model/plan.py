"""The order in which a cluster's components are reconciled, as data.

`CRDs` first, then each prerequisite in file order, then everything else concurrently, except
where `dependsOn` orders components. Each step knows the steps it must wait for (`after`, used by
the CLI's concurrent executor, so a failure stops only its dependants) and a `priority` (used by
the mothership, which runs one priority group at a time). Deletion is the same graph reversed.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.model.component import CRDS_COMPONENT, ComponentSet, ComponentSetError


@dataclass(frozen=True)
class PlanStep:
    name: str
    priority: int
    after: frozenset[str]


@dataclass(frozen=True)
class Plan:
    steps: tuple[PlanStep, ...]

    def names(self) -> list[str]:
        return [step.name for step in self.steps]

    def step(self, name: str) -> PlanStep:
        return next(step for step in self.steps if step.name == name)

    def groups(self) -> list[list[str]]:
        """Step names grouped by priority, lowest first."""
        by_priority: dict[int, list[str]] = {}
        for step in self.steps:
            by_priority.setdefault(step.priority, []).append(step.name)
        return [by_priority[p] for p in sorted(by_priority)]

    def dependants(self, name: str) -> set[str]:
        """Every step that (transitively) waits for `name`."""
        found: set[str] = set()
        frontier = {name}
        while frontier:
            frontier = {s.name for s in self.steps if s.after & frontier} - found
            found |= frontier
        return found

    def reversed(self) -> Plan:
        """The deletion plan: every edge reversed, priorities mirrored."""
        top = max((s.priority for s in self.steps), default=0)
        return Plan(
            tuple(
                PlanStep(
                    name=step.name,
                    priority=top + 1 - step.priority,
                    after=frozenset(s.name for s in self.steps if step.name in s.after),
                )
                for step in reversed(self.steps)
            )
        )


def plan_components(components: ComponentSet, *, with_crds: bool = True) -> Plan:
    """Plan a reconciliation of `components` (optionally preceded by the CRDs pseudo-component)."""
    steps: list[PlanStep] = []
    previous: frozenset[str] = frozenset()
    priority = 1
    if with_crds:
        steps.append(PlanStep(CRDS_COMPONENT, priority, frozenset()))
        previous = frozenset({CRDS_COMPONENT})
        priority += 1
    for spec in components.prerequisites:
        steps.append(PlanStep(spec.name, priority, previous | frozenset(spec.depends_on)))
        previous = frozenset({spec.name})
        priority += 1
    base = priority
    rest = {spec.name: spec for spec in components.components}
    levels: dict[str, int] = {}

    def level(name: str, path: tuple[str, ...]) -> int:
        if name in path:
            cycle = " -> ".join((*path[path.index(name) :], name))
            raise ComponentSetError(f"dependsOn cycle: {cycle}")
        if name not in levels:
            deps = [d for d in rest[name].depends_on if d in rest]
            levels[name] = 1 + max((level(d, (*path, name)) for d in deps), default=-1)
        return levels[name]

    for spec in components.components:
        steps.append(
            PlanStep(spec.name, base + level(spec.name, ()), previous | frozenset(spec.depends_on))
        )
    return Plan(tuple(steps))
