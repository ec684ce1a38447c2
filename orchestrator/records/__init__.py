"""The records every layer shares: what a run is configured with (:mod:`.config`), the
datasets it ranks (:mod:`.dataset`), the prompt templates (:mod:`.templates`) and judge-profile data
files they are read from (:mod:`.datafiles`), the judgment log format (:mod:`.log`), the
importers that turn other benchmarks' files into datasets (:mod:`.importers`) and the starter
config `orchestrator init` writes for a dataset (:mod:`.starter`).

Pydantic models and validation only: this layer imports nothing of the judging layer, the store,
the run engine, the offline readers or the CLI, so every one of them can import it."""
