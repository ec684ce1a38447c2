"""Filling the judgment cache from what users already paid for: old run files and judgment logs
(``record`` logs, exports). A later run that asks the same judge the same request takes the
answer from the cache instead of paying again (:mod:`orchestrator.judging.cache`).

A run file holds every request's rendered messages, so its judgments are keyed exactly as a new run
keys its requests. A judgment log holds only names and probabilities: its requests are rendered
again from the prompts and responses files, with the template each line names (or ``template``),
for the judge profile given — the same rendering a run does (:func:`~orchestrator.run.requests.render_messages`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...errors import OrchestratorError
from ...judging.answers import check_answer
from ...judging.cache import cache_key, judge_identity
from ...judging.client import JudgeProfile, JudgeRequest, Judgment, get_profile
from ...records.dataset import load_dataset
from ...records.log import LogRecord, read_jsonl
from ...records.templates import Template, get_template
from ...run.requests import DATASET_ANCHOR, render_messages
from ...store import JudgmentRecord, open_run
from ...store.cache import JudgmentCache
from ...store.identities import read_identities

__all__ = ["ImportResult", "import_log", "import_run"]

_KEPT = (
    "template kind prompt_id candidates status probs method capped unresolved top_logprobs text raw "
    "prompt_tokens completion_tokens cost_usd latency_s note"
).split()


@dataclass(frozen=True)
class ImportResult:
    read: int
    """Successful judgments found."""
    added: int
    """New cache entries (the rest were cached already)."""
    skipped: int = 0
    """Log lines of other judges."""


def _from_record(record: JudgmentRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in _KEPT}


def import_run(cache: JudgmentCache, run: str | Path) -> ImportResult:
    """Every successful judgment of a run file, keyed by the request's rendered messages.

    Each judgment is keyed with the identity its judge had when it answered, as the run recorded it
    (:mod:`orchestrator.store.identities`) — never the judge profile as it is now, which may name
    another model by now. Judgments replayed from a log (no model answered them) are skipped.

    Raises:
        OrchestratorError: not a run file, or a run file made before identities were recorded.
    """
    with open_run(run, write=False) as store:
        history = read_identities(store)
        if not history:
            raise OrchestratorError(
                f"{run}: the run file does not record which model answered (made by an older version); "
                "export it and import the log with --judge, --prompts, --responses instead"
            )
        templates = {t.name: t for t in store.templates().values()}
        read = added = skipped = 0
        for request, judgment in store.answered():
            identity = history.at(request.judge, judgment.created_at)
            if identity is None:
                skipped += 1
                continue
            template = templates[request.template]
            key = cache_key(identity, template.digest, request.messages, request.repeat)
            read += 1
            added += cache.put(
                key,
                model=str(identity.get("model", "")),
                template_digest=template.digest,
                repeat=request.repeat,
                judgment=_from_record(judgment),
            )
    return ImportResult(read, added, skipped)


def _shown_texts(record: LogRecord, prompt: Any, dataset: Any, where: str, responses: str | Path) -> list[str]:
    """The texts a log line's request showed, in order (the prompt's reference text for the anchor)."""
    texts = []
    for candidate in record.candidates:
        if candidate == DATASET_ANCHOR and record.kind == "reference" and prompt.reference:
            texts.append(prompt.reference)
        elif candidate in dataset.responses.get(record.prompt_id, {}):
            texts.append(dataset.responses[record.prompt_id][candidate].text)
        else:
            raise OrchestratorError(f"{where}: no response of {candidate!r} to prompt {record.prompt_id!r} in {responses}")
    return texts


def _profile(name: str, source: str | Path) -> JudgeProfile:
    try:
        return get_profile(name)
    except OrchestratorError as exc:
        raise OrchestratorError(f"{source}: judge {name!r}: {exc}") from None


def import_log(
    cache: JudgmentCache,
    log: str | Path,
    *,
    judge: str,
    prompts: str | Path,
    responses: str | Path,
    attribute: str | None = None,
    template: str | None = None,
    api_base: str | None = None,
) -> ImportResult:
    """The judgments of ``judge`` in a judgment log, rendered again from the data files.

    ``judge`` is a profile name; the log's lines of that judge are taken (all lines when the log
    has a single judge of another name). ``template`` is used for lines that name none; ``api_base``
    as a run's ``dispatch.api_base`` would be.

    Raises:
        OrchestratorError: an unreadable log line (file and line), a line whose prompt, candidate
            or template is unknown, or no line of that judge.
    """
    profile = _profile(judge, log)
    identity = judge_identity(profile, api_base)
    dataset = load_dataset(prompts, responses)
    rows = read_jsonl(log)
    names = {str(row.get("judge", "unknown")) for _, row in rows}
    wanted = judge if judge in names or len(names) != 1 else next(iter(names))
    templates: dict[str, Template] = {}
    read = added = skipped = 0
    for line, row in rows:
        where = f"{log}:{line}"
        try:
            record = LogRecord.model_validate(row)
        except ValidationError as exc:
            raise OrchestratorError(f"{where}: not a judgment ({exc.errors()[0]['msg']})") from None
        if record.judge != wanted:
            skipped += 1
            continue
        name = row.get("template") or template
        if not name:
            raise OrchestratorError(f"{where}: the line names no template; give --template NAME")
        if name not in templates:
            templates[name] = get_template(name)
        tpl = templates[name]
        if tpl.kind != record.kind:
            raise OrchestratorError(f"{where}: template {name!r} is {tpl.kind}, the line is a {record.kind} judgment")
        prompt = dataset.prompts.get(record.prompt_id)
        if prompt is None:
            raise OrchestratorError(f"{where}: prompt {record.prompt_id!r} is not in {prompts}")
        texts = _shown_texts(record, prompt, dataset, where, responses)
        messages = render_messages(tpl, prompt, texts, attribute=attribute or row.get("attribute"), prefill=profile.prefill)
        judgment = {
            "template": tpl.name,
            "kind": record.kind,
            "prompt_id": record.prompt_id,
            "candidates": record.candidates,
            "status": "ok",
            "probs": [record.probs],
            "method": record.method or "log",
            "samples": record.samples,
            "text": row.get("text") or "",
            "top_logprobs": row.get("top_logprobs") or [],
            "prompt_tokens": record.prompt_tokens,
            "completion_tokens": record.completion_tokens,
            "cost_usd": record.cost_usd,
            "note": f"imported from {Path(log).name}",
        }
        # the checks every stored answer passes (the log's record may hold levels the template does not)
        request = JudgeRequest(key="import", template=tpl, messages=messages, prompt_id=record.prompt_id, candidates=record.candidates)
        checked = check_answer(request, Judgment.model_validate({**judgment, "key": "import"}))
        if checked.status != "ok":
            raise OrchestratorError(f"{where}: {checked.error}")
        read += 1
        key = cache_key(identity, tpl.digest, messages, record.repeat)
        added += cache.put(key, model=identity["model"], template_digest=tpl.digest, repeat=record.repeat, judgment=judgment)
    if read == 0:
        raise OrchestratorError(f"{log}: no judgment of judge {judge!r} (the log has {', '.join(sorted(names))})")
    return ImportResult(read, added, skipped)
