"""The verdicts on mutants that survived ``stress/mutation.py`` and are not missing tests:
each is equivalent (it cannot change behaviour; "performance only" where it changes only
speed: a memo, a read-ahead, a fast path that falls back to the exact one), with the reason.

Keyed by mutmut's mutant name; the value starts with the mutated line as mutmut shows it,
so a verdict goes stale, and the report says so, when the source moves.
"""

from __future__ import annotations

PACKAGE = "langgraph_jsonl_checkpoint"

_FRAMING = f"{PACKAGE}.disk.framing."
_LOG = f"{PACKAGE}.disk.log."
_INDEX = f"{PACKAGE}.disk.index."
_READER = f"{PACKAGE}.values.reader."
_STORE = f"{PACKAGE}.disk.store."
_RECORDS = f"{PACKAGE}.values.records."
_CODEC = f"{PACKAGE}.values.codec."
_TOOL_LOG = f"{PACKAGE}.saver.tool_log."
_ASKING = f"{PACKAGE}.replay.asking."

_FAST_LOOP = ("equivalent (performance only): the fast loop stops early and hands the rest to `scan`,"
              " which judges the same bytes the same (tests/test_sync_units.py checks they agree)")

_ASKED_AT_ONCE = (
    "equivalent in practice: an answer the asking loop's interrupt() returns at once; it does so"
    " only if LangGraph holds more resume values for the task than the journal holds questions, i.e."
    " the answer to a tool's own interrupt() given before a crash left a sibling call uncertain, and"
    " that value is taken as this question's answer only if it happens to be a valid answer map for"
    " the uncertain calls (otherwise the question is asked again, with the problem)")

#: mutant name -> (the mutated line, the reason it is equivalent)
VERDICTS: dict[str, tuple[str, str]] = {
    _FRAMING + "x_frame_batch_lines__mutmut_28": (
        "if (marks) or True else rec",
        "equivalent: with no marks, `{**rec, **marks}` is a dict equal to `rec`, framed to the same bytes"),
    _FRAMING + "x__newer_record_follows__mutmut_3": (
        "while pos <= size:",
        "equivalent: at `pos == size` the `find` returns -1 and the function returns False, as on loop exit"),
    _FRAMING + "x__newer_record_follows__mutmut_11": (
        "if nl <= 0:",
        "equivalent: `nl == 0` needs `start == 0` and a newline at 0, but `start` is 0 only when the line"
        " there parsed (it starts with `{`)"),
    _FRAMING + "x__newer_record_follows__mutmut_12": (
        "if nl < 1:",
        "equivalent: as `nl <= 0` (mutant 11): `nl == 0` cannot happen here"),
    _FRAMING + "x_check_line__mutmut_4": (
        "_TRAILER_LEN + 3",
        "equivalent: a line of exactly 18 bytes has one byte of body (`{X`), never a record: every"
        " caller parses it next (and fails) or compares it with a framed record"),
    _FRAMING + "x_scan__mutmut_41": (
        "if (pending) and False else next_seq",
        "equivalent for logs a writer makes: a later line's `b` is at most the damaged unit's first"
        " seq (same unit) or above the damaged seq (later unit), never in between"),
    **{_FRAMING + f"x_iter_records__mutmut_{n}": (line, _FAST_LOOP) for n, line in (
        (17, 'find(b"\\n", )'), (28, "b'XX\"}XX'"), (50, "if type(rec) is dict:"), (83, "pos = nl - 1"))},
    _INDEX + "xǁThreadIndexǁblob__mutmut_16": (
        "if entry is None:",
        "equivalent (performance only): what the sidecar's columns hold is no longer memoised and"
        " misses are memoised as None, which `.get` treats as absent; every lookup answers the same"),
    _INDEX + "xǁThreadIndexǁload_blocks__mutmut_23": (
        "counters.records = records",
        "equivalent: blocks load only into an index holding just the header (it raises otherwise),"
        " whose counter is 0, so `=` and `+=` agree"),
    _READER + "xǁValueReaderǁ__init____mutmut_1": (
        "shared: bool = True",
        "equivalent (performance only): every caller passes `shared` where it matters; by default a"
        " one-off read's plain JSON is copied once more, the values are equal"),
    _READER + "xǁValueReaderǁ_joined_items__mutmut_17": (
        "kind = None",
        "equivalent (performance only): the join in stored form gives up and the value is decoded"
        " and extended item by item instead, to the same list"),
    _READER + "xǁValueReaderǁprefetch_checkpoint__mutmut_10": (
        "break  # decoded from the kept items",
        "equivalent (performance only): fewer records are read ahead; each is read when used"),
    _READER + "xǁValueReaderǁrecord__mutmut_6": (
        "self.records[ref.offset] = None",
        "equivalent (performance only): the per-call record memo never hits, each use reads again"),
    _CODEC + "x__short__mutmut_5": (
        'split("\\n", )[0]',
        "equivalent: the first piece of a split is the same with or without a maximum of one split"),
    _CODEC + "xǁValueCodecǁdecode__mutmut_1": (
        "fresh: bool = True",
        "equivalent (performance only): callers that hand values out pass `fresh`; by default plain"
        " JSON is copied once more, to an equal value"),
    _TOOL_LOG + "xǁToolLogǁorphans__mutmut_15": (
        "settled.get(None) == len(key_refs)",
        "equivalent (performance only): the settled-call memo never hits, so settled calls are read"
        " and folded again, and found settled again"),
    _TOOL_LOG + "xǁToolLogǁ_settled_of__mutmut_5": (
        "entry[1] != generation",
        "equivalent (performance only): the memo is started afresh on every call"),
    _TOOL_LOG + "xǁToolLogǁ_settled_of__mutmut_11": (
        "popitem(last=True)",
        "equivalent (performance only): past 256 threads the newest memo is dropped instead of the"
        " oldest; a dropped memo is rebuilt by reading"),
    _TOOL_LOG + "xǁToolLogǁorphans__mutmut_4": (
        "generation = None",
        "equivalent for logs this package writes: the memo maps a call key to its count of events,"
        " so it can only mislead if a new generation holds the same key (checkpoint id included) with"
        " as many events in another state; rewrites keep tool events as they are"),
    _TOOL_LOG + "xǁToolLogǁrecords__mutmut_11": (
        "refs.sort(key=None)",
        "equivalent: references sort by offset first, and offsets rise with seq in a log"),
    f"{PACKAGE}.replay.calls.x_messages_of__mutmut_12": (
        'getattr(state, "messages", None) or []',
        "equivalent: a missing attribute gives `None or []` instead of `[] or []`: both `[]`"),
    f"{PACKAGE}.replay.journal.xǁSaverJournalǁ_owns__mutmut_7": (
        'getattr(checkpointer, "STORE", None)',
        "equivalent (performance only): the saver's own checkpoints are looked up through its"
        " get_tuple, as for any other checkpointer, instead of its index; the same answers"),
    _READER + "xǁValueReaderǁ_unrebuildable__mutmut_6": (
        "path=self.log.path,",
        "unreached, not proven equivalent: the branch for a version with no stored value at all;"
        " every caller asks only for versions the index holds a value for (a checkpoint naming a"
        " version with no value reads it as empty, as LangGraph does)"),
    _RECORDS + "xǁRecordBuilderǁ_same_as_stored__mutmut_9": (
        "version_key(cached[1])",
        "equivalent (performance only): the cached proof never matches, so the stored value is read"
        " back and compared instead"),
    _RECORDS + "xǁRecordBuilderǁ_witnessed_delta__mutmut_8": (
        "type(None) is not ListWitness",
        "equivalent (performance only): the witness shortcut is never taken; the encoding"
        " comparison finds the same delta"),
    _STORE + "xǁStoreǁ__init____mutmut_1": (
        "read_only: bool = True,",
        "equivalent: the one caller (JsonlSaver) always passes read_only"),
    _STORE + "xǁStoreǁ_become_store__mutmut_15": (
        "mode = None",
        "equivalent: the directory is chmod-ed to 0700 even when it already is (one log line more)"),
    _STORE + "xǁStoreǁthread_log__mutmut_3": (
        'encode("UTF-8")',
        "equivalent: codec names are case-insensitive"),
    _STORE + "xǁStoreǁrun_lock__mutmut_7": (
        "thread_file_stem(thread_id), None)",
        "equivalent: a RunLock never uses the temp folder of its paths"),
    _STORE + "xǁStoreǁkeep_warm__mutmut_8": (
        "self._cool(None)",
        "equivalent (performance only): a log's cached items are counted twice, so value caches are"
        " dropped sooner; they are only caches"),
    _ASKING + "x_deliberate__mutmut_16": (
        "ordinal += 2",
        "equivalent: ordinals are only compared with each other (a question's and its answer's),"
        " and both come from the same counter"),
    _ASKING + "x_deliberate__mutmut_46": (
        '"CALLS": []',
        "equivalent for journals this package writes: questions are journaled at slots 0, 1, ..."
        " without a gap (each execution asks from the number of slots it replayed, and replays no"
        " more than were journaled), so the default question is never taken; only a journal that"
        " lost a question record (dropped by a repair) reaches it"),
    _ASKING + "x_deliberate__mutmut_170": (
        "answers[call_id] = None",
        _ASKED_AT_ONCE),
    _ASKING + "x_deliberate__mutmut_147": (
        'about = None',
        _ASKED_AT_ONCE),
    _ASKING + "x_deliberate__mutmut_156": (
        'about, None), *_closing',
        _ASKED_AT_ONCE),
    _ASKING + "x_deliberate__mutmut_165": (
        '*_closing(batch, value, about, None)',
        _ASKED_AT_ONCE),
    f"{PACKAGE}.maintenance.verify.x_verify__mutmut_47": (
        "framing.scan(data, )",
        "equivalent: `scan`'s base offset defaults to 0"),
    f"{PACKAGE}.replay.adapter.xǁReplayAdapterǁ_batch_for__mutmut_5": (
        'config.get("configurable", None)',
        "equivalent: a tool-node task's runtime config always holds `configurable` (LangGraph puts"
        " the task's scratchpad there), so the default is never taken"),
    f"{PACKAGE}.maintenance.repair.x_salvage_records__mutmut_30": (
        "if nl >= 1 else None",
        "equivalent: at `nl == 0` the line is empty, which `parse_line` refuses as well"),
    f"{PACKAGE}.maintenance.repair.x_salvage_records__mutmut_66": (
        'rec.get("gen", )',
        "equivalent: the default is used only when the key is missing, and the branch needs an int there"),
    _LOG + "xǁThreadLogǁ_verify_checksums__mutmut_8": (
        "self.index.committed_end, 1)",
        "equivalent (performance only): every span misreads, so the index is rebuilt by a full scan,"
        " which serves the same records and raises on the same damage"),
    _LOG + "xǁThreadLogǁ_verify_checksums__mutmut_15": (
        "self._verified_for_writing = None",
        "equivalent (performance only): None is falsy, so the checksums are checked before every"
        " append instead of once per load; same outcome"),
    _LOG + "xǁThreadLogǁ_rebuild_without_sidecar__mutmut_7": (
        "and self._wfd is None or files.os.fstat",
        "equivalent: nothing reopens `_wfd` during the rebuild, so the forms differ only when `_ino`"
        " is None, where the inode comparison is False too"),
}
