#!/usr/bin/env python3
# A model for kshare's 'command' provider: kshare starts it once per slot of
# 'max-concurrent-operations' and writes one row per line on its stdin, a
# JSON object of the model's INPUT columns; it answers each row with one
# JSON line on its stdout, whose "output" fills the OUTPUT columns.
import json
import sys


def load_model():
    # The expensive part, done once per process, not once per row.
    return {"ink": "office", "coffee": "drinks", "jam": "pantry", "flour": "pantry",
            "kettle": "kitchen", "apple": "produce", "grapes": "produce"}


def main():
    model = load_model()
    for line in sys.stdin:
        row = json.loads(line)
        if row.get("product") is None:
            # Nothing to classify: never deliver this record again.
            answer = {"status": "reject", "error": "no product"}
        else:
            answer = {"status": "accept", "output": {"department": model.get(row["product"], "other")}}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
