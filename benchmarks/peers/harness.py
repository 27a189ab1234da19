"""Stdlib-only pieces shared by the orchestrator and both workers (ours and the peers').

The workers run in different virtual environments (ours; the peers' isolated one), so this
module imports nothing outside the standard library. A worker reports one JSON object on a
line starting with :data:`RESULT_PREFIX`; everything else it prints (peer libraries are
chatty) is ignored by :func:`parse_results`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

RESULT_PREFIX = "DXP-PEERS-RESULT "
#: TEM's beta for every system (mldp-text hard-codes 0.001; pypantera and ours take it).
BETA = 0.001


def emit(result: dict[str, Any]) -> None:
    """Print ``result`` (plus this process's peak memory) as one flushed result line."""
    result = {**result, "worker_hwm_mb": own_peak_mb()}
    print(RESULT_PREFIX + json.dumps(result, sort_keys=True), flush=True)


def parse_results(stdout: str) -> list[dict[str, Any]]:
    """Every result object in a worker's standard output, in order."""
    results = []
    for line in stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            payload = json.loads(line[len(RESULT_PREFIX) :])
            if not isinstance(payload, dict):
                raise ValueError("a result line must hold a JSON object")
            results.append(payload)
    return results


def chunks(words: Sequence[str], size: int) -> list[list[str]]:
    """``words`` cut into consecutive lists of at most ``size`` words."""
    if size < 1:
        raise ValueError("chunk size must be >= 1")
    return [list(words[start : start + size]) for start in range(0, len(words), size)]


def timed_sample(
    process: Callable[[list[str]], list[str]],
    words: Sequence[str],
    *,
    chunk: int,
    budget: float,
    repeats: int = 3,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Run ``process`` over ``words`` chunk by chunk within a time budget.

    The first pass stops after the chunk that crosses ``budget`` seconds, so a slow system
    is measured on a smaller sample (``words_done`` < ``len(words)``). When the whole input
    fits comfortably (first pass under a third of the budget), up to ``repeats`` passes run
    and the fastest counts, as for every system. Returns words done, the best pass's
    seconds, words/s, the outputs of the first pass and their share unchanged, counted over
    the chunks that came back with as many words as they went in (``misaligned_chunks``:
    the others).
    """
    pieces = chunks(words, chunk)
    outputs: list[str] = []
    best = float("inf")
    done = same = aligned = misaligned = 0
    for attempt in range(repeats):
        start = clock()
        produced: list[str] = []
        count = 0
        for piece in pieces:
            result = process(piece)
            if attempt == 0:
                produced.extend(result)
                # Compared chunk by chunk: a chunk that comes back with another number of
                # words (dp-diffractor's detokenizer glues some) would shift every later
                # comparison, as the whole-list comparison did (migration review F2).
                if len(result) == len(piece):
                    same += sum(a == b for a, b in zip(piece, result, strict=True))
                    aligned += len(piece)
                else:
                    misaligned += 1
            count += len(piece)
            if attempt == 0 and clock() - start > budget:
                break
        elapsed = clock() - start
        if attempt == 0:
            outputs, done = produced, count
        best = min(best, elapsed)
        if done < len(words) or elapsed * 3 > budget:
            break
    return {
        "words_done": done,
        "seconds": best,
        "words_per_s": done / best if best > 0 else float("inf"),
        "outputs": outputs,
        "unchanged": same / aligned if aligned else None,
        "misaligned_chunks": misaligned,
    }


def own_peak_mb() -> float | None:
    """This process's peak resident set (``VmHWM``, reset by ``exec``) in MiB; Linux only."""
    try:
        with open("/proc/self/status") as stream:
            for line in stream:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def unchanged_share(inputs: Sequence[str], outputs: Sequence[str]) -> float | None:
    """Share of outputs equal to their input word (None when lengths differ)."""
    if len(outputs) == 0 or len(outputs) > len(inputs):
        return None
    same = sum(1 for a, b in zip(inputs, outputs, strict=False) if a == b)
    return same / len(outputs)
