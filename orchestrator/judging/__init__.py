"""Judges: prompt templates as data, log-probability extraction, litellm client, embedded judge."""

from ..records.templates import Criterion, Template, get_template, load_template, load_templates, template_dirs
from .extract import Extraction, OptionReading, extract_options, parse_verdicts, read_positions

__all__ = [
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
