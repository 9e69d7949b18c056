"""The brief's quality on a real layer (SPEC §26): tests/brief_cases.json over the reference
data's fixtures/real-latest/ (support.REFERENCE; as it is: degraded), each case a path
(inside and outside .ai/, existing and new, with and without an intent) and the objects a
careful reader must see. Prints the recall within the default budget (a must-see object
counts when its URI is in the brief's text, its list of what was left out aside), the mean
lines and the mean characters of the text; without the reference data, a line saying it was
skipped.

Usage: python3 tests/brief_quality.py [--misses]   (a benchmark, not a test; bench.py prints
its figures)"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = os.path.join(HERE, "brief_cases.json")
sys.path.insert(0, HERE)
from search_quality import generation, on_corpus  # noqa: E402


def measure(repo):
    """{"cases", "recall", "lines", "characters", "misses"} over every case, in one process,
    with the default budget."""
    majordomus, gen = generation(repo)
    with open(CASES, encoding="utf-8") as handle:
        cases = json.load(handle)["cases"]
    recall = lines = characters = 0.0
    misses = []
    for case in cases:
        arguments = {"path": case["path"]}
        if case.get("intent"):
            arguments["intent"] = case["intent"]
        value = gen.execute("context.brief", arguments)
        text = majordomus.brief_text(value)
        shown = text.split("\n## Left out\n")[0]     # named as left out is not seen
        seen = [uri for uri in case["must"] if uri in shown]
        recall += len(seen) / len(case["must"])
        lines += value["used_lines"]
        characters += len(text)
        if len(seen) < len(case["must"]):
            misses.append((case["path"], case.get("intent"),
                           [uri for uri in case["must"] if uri not in seen]))
    count = len(cases)
    return {"cases": count, "recall": recall / count, "lines": lines / count,
            "characters": characters / count, "misses": misses}


def main(argv):
    def report(repo):
        result = measure(repo)
        print("brief %d cases: recall %.3f within the default budget, mean %.1f lines, mean "
              "%.0f characters" % (result["cases"], result["recall"], result["lines"],
                                   result["characters"]))
        if "--misses" in argv:
            for path, intent, missed in result["misses"]:
                print("  miss: %s (intent %r): %s" % (path, intent, " ".join(missed)))
    return on_corpus("brief quality", "mj-brief-quality-", report)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
