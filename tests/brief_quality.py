"""The brief's quality on a real layer (SPEC §26, §29): tests/brief_cases.json over the
reference data's fixtures/real-latest/ (support.REFERENCE; as it is: degraded), each case a
path (inside and outside .ai/, existing and new, with and without an intent) and the objects
a careful reader must see (`must_see`). Prints, within the default budget:
- recall: of what must be seen, the share the brief's text shows (its URI in the text, or,
  for a rule, a line of its own: its statement, or its id and title as a blocking rule's
  line, SPEC §29; the list of what was left out and the ids of the rules also in force are
  not seeing them), the mean over cases;
- precision: of what the text shows in full (the chain's documents with their bodies, the
  rules with their statements, the related objects with an excerpt), the share that must be
  seen, the mean over the cases that show anything in full;
- the mean lines and the mean characters of the text;
without the reference data, a line saying it was skipped.

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


def shown_in_full(value):
    """The URIs the brief's text shows in full: its documents (with their bodies), the rules
    it states (named and relevant, SPEC §29; every rule listed, before it), the related
    objects that carry an excerpt."""
    full = [doc["uri"] for doc in value["documents"]]
    full += [rule["uri"] for rule in value["rules"]
             if rule.get("why", "named") in ("named", "relevant")]
    full += [hit["uri"] for hit in value["related"] if hit.get("excerpt")]
    return list(dict.fromkeys(full))


def measure(repo):
    """{"cases", "recall", "precision", "lines", "characters", "misses", "noise"} over every
    case, in one process, with the default budget."""
    majordomus, gen = generation(repo)
    with open(CASES, encoding="utf-8") as handle:
        cases = json.load(handle)["cases"]
    recall = precision = lines = characters = 0.0
    judged = 0
    misses, noise = [], []
    for case in cases:
        arguments = {"path": case["path"]}
        if case.get("intent"):
            arguments["intent"] = case["intent"]
        value = gen.execute("context.brief", arguments)
        text = majordomus.brief_text(value)
        shown = text.split("\n## Left out\n")[0]     # named as left out is not seen
        must = case["must_see"]
        own = {rule["uri"] for rule in value["rules"] if rule.get("why") == "blocking"}
        seen = [uri for uri in must if uri in shown or uri in own]
        recall += len(seen) / len(must)
        full = shown_in_full(value)
        if full:
            judged += 1
            precision += sum(1 for uri in full if uri in must) / len(full)
        lines += value["used_lines"]
        characters += len(text)
        if len(seen) < len(must):
            misses.append((case["path"], case.get("intent"),
                           [uri for uri in must if uri not in seen]))
        noise.append((case["path"], case.get("intent"), [uri for uri in full if uri not in must]))
    count = len(cases)
    return {"cases": count, "recall": recall / count,
            "precision": precision / judged if judged else 0.0, "lines": lines / count,
            "characters": characters / count, "misses": misses, "noise": noise}


def main(argv):
    def report(repo):
        result = measure(repo)
        print("brief %d cases: recall %.3f within the default budget, precision %.3f, mean "
              "%.1f lines, mean %.0f characters" % (
                  result["cases"], result["recall"], result["precision"], result["lines"],
                  result["characters"]))
        if "--misses" in argv:
            for path, intent, missed in result["misses"]:
                print("  miss: %s (intent %r): %s" % (path, intent, " ".join(missed)))
        if "--noise" in argv:
            for path, intent, extra in result["noise"]:
                print("  shown in full, not a must: %s (intent %r): %s" % (
                    path, intent, " ".join(extra)))
    return on_corpus("brief quality", "mj-brief-quality-", report)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
