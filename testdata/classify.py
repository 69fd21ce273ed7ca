#!/usr/bin/env python3
# A persistent kshare worker: kshare work --persistent starts it once per
# --concurrency slot and writes one row per line, as JSON, on its stdin; it
# answers each row with one JSON line on its stdout.
import json
import sys


def load_model():
    # The expensive part, done once per process, not once per row.
    return {"ink": "office", "coffee": "drink", "jam": "food", "kettle": "kitchen"}


def main():
    model = load_model()
    for line in sys.stdin:
        row = json.loads(line)
        if row.get("product") is None:
            # Nothing to classify: never deliver this record again.
            answer = {"status": "reject", "error": "no product"}
        elif row["product"] not in model:
            # Maybe a newer model knows it: deliver it again later.
            print("unknown product %r" % row["product"], file=sys.stderr, flush=True)
            answer = {"status": "release", "error": "unknown product"}
        else:
            label = model[row["product"]]
            answer = {"status": "accept", "output": {"order_id": row["order_id"], "label": label}}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
