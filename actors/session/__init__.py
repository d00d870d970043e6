"""Sessions: a conversation that outlives the process.

A session is an append-only JSONL file of typed entries (:mod:`.entries`) written by the one
codec (:mod:`.store`), versioned with step migrations (:mod:`.migrations`), listed and pruned
per directory (:mod:`.catalogue`), read back as history (:mod:`.history`) and compacted
(:mod:`.compaction`).
"""
