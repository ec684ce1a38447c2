"""Judges: prompt templates as data, log-probability extraction, litellm client, embedded judge."""

from ..records.judgments import JudgeRequest, Judgment
from ..records.templates import Criterion, Template, get_template, load_template, load_templates, template_dirs
from .extract import Extraction, OptionReading, extract_options, parse_verdicts, read_positions
from .profiles import JudgeProfile
from .protocol import Judge

__all__ = [
    "Judge",
    "JudgeProfile",
    "JudgeRequest",
    "Judgment",
    "Criterion",
    "Extraction",
    "OptionReading",
    "Template",
    "extract_options",
    "get_template",
    "load_template",
    "load_templates",
    "parse_verdicts",
    "read_positions",
    "template_dirs",
]
