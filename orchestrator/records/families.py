"""Model-family maps (``--family NAME=FAMILY``, a run's ``model.families``): one parser and one
validator for every command that reads one (``fit raee``, ``replay``, a run's config), so that a
name that is neither a judge nor a candidate, or a candidate given two families, is refused in
one line rather than showing the self-preference prior as if it had been measured.

The self-preference control tells a judge's taste for answers of its own family from
that family's quality only beside a judge without the taste, so a usable map names, among the
judges, one of a candidate's family and one of none.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ..errors import OrchestratorError

__all__ = ["family_problem", "parse_families", "self_control_problem"]


def parse_families(items: Sequence[str] | None, option: str = "--family") -> dict[str, str]:
    """``["gpt-4o=openai", …]`` → ``{"gpt-4o": "openai", …}``.

    Raises:
        OrchestratorError: one line for an entry that is not ``NAME=FAMILY``, or a name given two
            different families (the last would otherwise win silently)."""
    families: dict[str, str] = {}
    for item in items or ():
        name, sep, family = item.partition("=")
        name, family = name.strip(), family.strip()
        if not sep or not name or not family:
            raise OrchestratorError(f"{option} {item!r}: expected NAME=FAMILY (a judge's or a candidate's name and its model family)")
        if families.get(name, family) != family:
            raise OrchestratorError(f"{option}: {name!r} is given two families ({families[name]!r} and {family!r}); give each name one")
        families[name] = family
    return families


def self_control_problem(
    judges: Sequence[str], families: Mapping[str, str], where: str = "among the families", candidates: Collection[str] | None = None
) -> str | None:
    """Why the ``self`` control cannot be fitted for these judges (None: it can): a judge's taste
    for its own family is told from that family's quality only beside a judge without the taste,
    so it needs a judge of a candidate's family and a judge of none. ``candidates`` (when known)
    may include judges: the textbook self-preference design has a judge that is also a candidate,
    beside a neutral judge; without them, the names that are not judges are."""
    if candidates is not None:
        candidate_families = {families[c] for c in candidates if c in families}
    else:
        candidate_families = {f for name, f in families.items() if name not in judges}
    own = [j for j in judges if families.get(j) in candidate_families]
    neutral = [j for j in judges if families.get(j) not in candidate_families]
    if own and neutral:
        return None
    return (
        f"needs, {where}, a judge of a candidate's family and a judge of none "
        "(a judge's taste for its own family is told from that family's quality only by a judge without the taste)"
    )


def family_problem(
    families: Mapping[str, str],
    judges: Sequence[str],
    candidates: Collection[str] | None,
    *,
    where: str,
    control: str = "--control self",
    every_judge: bool = True,
) -> str | None:
    """What is wrong with a family map for the ``self`` control (None: nothing), in one line naming
    ``where`` the map came from: a name that is neither one of ``judges`` nor one of ``candidates``
    (None: the candidates are not known yet, e.g. a config read before its data), no candidate with
    a family, a judge without one (with ``every_judge``; a run's config treats an undeclared judge
    as neutral), or no judge of a candidate's family beside one of none (:func:`self_control_problem`)."""
    if candidates is not None:
        known = set(judges) | set(candidates)
        unknown = [name for name in families if name not in known]
        if unknown:
            shown = sorted(candidates)
            more = f", … ({len(shown)} in all)" if len(shown) > 6 else ""
            return (
                f"{where}: {unknown[0]!r} is neither a judge nor a candidate here "
                f"(judges: {', '.join(judges) or 'none'}; candidates: {', '.join(shown[:6]) or 'none'}{more})"
            )
        if not any(c in families for c in candidates):
            return f"{control}: no candidate has a family in {where}; give the candidates' model families too"
    if every_judge:
        missing = [j for j in judges if j not in families]
        if missing:
            return f"{control}: no family for judge {missing[0]!r} in {where}; declare every judge's and candidate's model family"
    problem = self_control_problem(judges, families, f"in {where}", candidates)
    return None if problem is None else f"{control} {problem}"
