#!/usr/bin/env python3
"""Seeds a running bankd for the transfer scenarios of bench/run: N CHECKING accounts of the root
entity, each funded by a simulated ACH credit. Usage: seed.py BASE_URL API_KEY N OUT_FILE. Writes the account ids, one per line."""

import base64
import json
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor

base, key, count, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
auth = "Basic " + base64.b64encode(f":{key}".encode()).decode()
FUNDS = 1_000_000_000_000


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", auth)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read() or b"null")


# The root entity owns the root accounts; the bench accounts belong to it too.
root = call("GET", "/bank-accounts?limit=1")["bank_accounts"][0]["owners"][0]


def make(i):
    account = call("POST", "/bank-accounts", {"entity_id": root, "description": f"Bench {i}"})
    credit = {
        "destination_account_number_id": account["default_account_number_id"],
        "amount": FUNDS,
        "company_id": "BENCHFUNDS",
        "company_name": "Bench funding",
    }
    assert call("POST", "/simulate/receive-ach-credit", credit)["status"] == "COMPLETED"
    return account["id"]


with ThreadPoolExecutor(max_workers=16) as pool:
    ids = list(pool.map(make, range(count)))
with open(out, "w") as f:
    f.write("\n".join(ids) + "\n")
