"""What an Ascend C kernel developer should do about each kind of msSanitizer or msaicerr
finding: one short, concrete sentence each, for `npuwatch sanitizer summary`."""

from __future__ import annotations

_COPY = (
    "check the DataCopy length/offset against the tensor size allocated on the host (and the "
    "tiling that computes it); the frame outside the CANN headers is where the copy is issued"
)
_BY_KIND = {
    "illegal_read": f"reading outside any allocation: {_COPY}",
    "illegal_write": f"writing outside any allocation: {_COPY}",
    "out_of_bounds": (
        "the access runs past the end of its buffer: check the last tile's length (the tail "
        "when the total length is not a multiple of the tile) and the buffer size given to "
        "InitBuffer/SetGlobalBuffer"
    ),
    "misaligned_access": (
        "align the address to 32 bytes: a UB/L1 offset or a GM DataCopy length must be a "
        "multiple of 32 bytes (use DataCopyPad for a tail that is not)"
    ),
    "uninitialized_read": (
        "the memory is read before anything wrote it: copy the data in (or Duplicate a value) "
        "before the read, and check that every block writes its whole tile"
    ),
    "illegal_free": (
        "free only what was allocated, once: check aclrtFree/free calls for a double free or "
        "an address that was moved after the allocation"
    ),
    "memory_leak": (
        "free the allocation made at the line shown (aclrtFree) on every path, the error paths "
        "included"
    ),
    "unused_memory": (
        "memory allocated and never used by a kernel: drop the allocation or check that the "
        "kernel is given this address"
    ),
    "internal_error": (
        "msSanitizer itself failed: rerun with the latest CANN and report the serialNo and the "
        "log under mindstudio_sanitizer_log/ if it stays"
    ),
    "raw_hazard": (
        "a pipe reads what another pipe writes without waiting: insert SetFlag/WaitFlag between "
        "the two pipes (or a PipeBarrier), or use the queues (EnQue/DeQue) that do it for you"
    ),
    "war_hazard": (
        "a pipe overwrites what another pipe still reads: insert SetFlag/WaitFlag between the "
        "two pipes (or a PipeBarrier), or double-buffer the tensor"
    ),
    "waw_hazard": (
        "two pipes write the same memory unordered: insert SetFlag/WaitFlag between the two "
        "pipes (or a PipeBarrier) so that the last write is the one you mean"
    ),
    "unpaired_set_flag": (
        "a SetFlag has no matching WaitFlag on the same pipes and event id: add the WaitFlag "
        "(or remove the SetFlag) so that every event is consumed before the kernel ends"
    ),
    "unpaired_wait_flag": (
        "a WaitFlag has no matching SetFlag: add the SetFlag on the source pipe, or the pipe "
        "waits forever (an AI Core timeout on the board)"
    ),
    "redundant_set_flag": (
        "the same event is set twice before it is waited for: remove the extra SetFlag"
    ),
    "redundant_wait_flag": (
        "the pipes are already ordered here: remove the extra WaitFlag (it only costs time)"
    ),
    "register_not_reset": (
        "restore the register to its default before the kernel returns (e.g. SetMaskNorm, "
        "ResetMask, SetAtomicNone after an atomic add)"
    ),
}
_UB = (
    "the UB/L1 offset is outside the buffer: check the InitBuffer sizes and the offsets of "
    "AllocTensor/LocalTensor slices against the tile length"
)
_SINGLE_OP_FAILED = (
    "the kernel fails alone with the dumped inputs: map the current pc to the source (section 3 "
    "of info.txt) and run it under mssanitizer --tool=memcheck"
)
_AICERR = (
    (
        "memset or atomic_clean",
        "insert a memset (atomic_clean) before this operator in the "
        "graph, or zero the output in the kernel before accumulating into it",
    ),
    (
        "set_flag and wait_flag",
        "pair every SetFlag with a WaitFlag on the same pipes and event "
        "id; run the kernel under mssanitizer --tool=synccheck to find the unpaired one",
    ),
    (
        "number of AI Cores",
        "launch with a blockDim no larger than the AI Cores of the chip "
        "(driver_aicore_num), and check the tiling that computes it",
    ),
    (
        "precision overflow",
        "the atomic add overflows its dtype: accumulate in float32 or scale the inputs",
    ),
    ("single-operator test case", _SINGLE_OP_FAILED),
    (
        "memory address of the operator is abnormal",
        "the addresses given to the kernel are "
        "wrong: check the framework/application that allocates the inputs and outputs (section 4)",
    ),
    (
        "Internal error",
        "msaicerr could not analyse the error: send info.txt and debug_info.txt to Ascend support",
    ),
)


def advice_for(kind: str, memory_space: str | None) -> str:
    """The sentence for a record's kind; illegal accesses differ on GM and on UB/L1/L0."""
    if kind in {"illegal_read", "illegal_write"} and memory_space not in {None, "GM"}:
        return _UB
    return _BY_KIND.get(
        kind, "read the record's lines in the report: npuwatch does not know this kind yet"
    )


def aicerr_advice(conclusion: str, single_op_result: str | None) -> str:
    """The sentence for msaicerr's root-cause conclusion (first matching phrase)."""
    for phrase, advice in _AICERR:
        if phrase.lower() in conclusion.lower():
            return advice
    if single_op_result and "failed" in single_op_result:
        return _SINGLE_OP_FAILED
    return (
        "map the current pc to the kernel source (section 3 of info.txt) and run the kernel "
        "under mssanitizer --tool=memcheck"
    )
