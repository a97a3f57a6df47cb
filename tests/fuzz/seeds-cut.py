#!/usr/bin/python3
"""Choose at most LIMIT inputs of a libFuzzer merge for tests/fuzz/seeds/.

Usage: seeds-cut.py CONTROL_FILE LIMIT MAX_BYTES OUT_DIR

CONTROL_FILE is the -merge_control_file a merge wrote (its FT lines list
the features each input reached). Inputs with names of our own (not
libFuzzer's 40-hex-digit ones: the regression inputs and hand-written
seeds) are always kept; then, greedily, the input that adds the most
features not yet covered, until LIMIT inputs are chosen or none adds a
feature. Inputs above MAX_BYTES are left out. The chosen ones are copied
into OUT_DIR (which must exist); the totals are printed.
"""
import os
import re
import shutil
import sys

HASH_NAME = re.compile(r"^[0-9a-f]{40}$")


def read_control(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        lines = f.read().split("\n")
    count = int(lines[0])
    files = lines[2:2 + count]
    features, edges = {}, {}
    for line in lines[2 + count:]:
        words = line.split()
        if len(words) >= 2 and words[0] in ("FT", "COV"):
            sets = features if words[0] == "FT" else edges
            sets[int(words[1])] = set(int(w) for w in words[2:])
    return files, features, edges


def greedy(sets, candidates, chosen, covered, limit):
    """Add to chosen the candidates covering the most of sets not yet
    in covered, one at a time, while any adds something."""
    # Gains only shrink: a stale gain is an upper bound, recomputed
    # before it is trusted (lazy greedy).
    gains = sorted(((len(sets.get(i, set()) - covered), i)
                    for i in candidates if i not in chosen), reverse=True)
    while gains and len(chosen) < limit:
        gain, i = gains.pop(0)
        fresh = len(sets.get(i, set()) - covered)
        if fresh == 0:
            continue
        if gains and fresh < gains[0][0]:
            gains.append((fresh, i))
            gains.sort(reverse=True)
            continue
        chosen.append(i)
        covered |= sets[i]


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    control, limit, max_bytes, out = sys.argv[1:]
    limit, max_bytes = int(limit), int(max_bytes)
    files, features, edges = read_control(control)
    candidates = [i for i in features
                  if os.path.getsize(files[i]) <= max_bytes]
    # (a seed copied into the corpus is there twice: once is enough)
    named = {}
    for i in candidates:
        name = os.path.basename(files[i])
        if not HASH_NAME.match(name):
            named.setdefault(name, i)
    chosen = list(named.values())
    covered, covered_edges = set(), set()
    for i in chosen:
        covered |= features[i]
        covered_edges |= edges.get(i, set())
    greedy(edges, candidates, chosen, covered_edges, limit)
    for i in chosen:
        covered |= features[i]
    greedy(features, candidates, chosen, covered, limit)
    all_features, all_edges = set(), set()
    for i in features:
        all_features |= features[i]
        all_edges |= edges.get(i, set())
    for i in chosen:
        covered_edges |= edges.get(i, set())
    size = 0
    for i in chosen:
        shutil.copy(files[i], out)
        size += os.path.getsize(files[i])
    print(f"{len(chosen)} of {len(features)} inputs, {size} bytes, "
          f"{len(covered)} of {len(all_features)} features, "
          f"{len(covered_edges)} of {len(all_edges)} edges")


main()
