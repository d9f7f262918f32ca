#!/usr/bin/env python3
"""A webhook receiver for origin/tests/webhooks.rs, with its own check of the Standard Webhooks
signature (https://www.standardwebhooks.com/), written from the specification with Python's
standard library only, so that it shares nothing with the service's signer.

Each POST is checked (webhook-id, webhook-timestamp within five minutes, and a `v1,` signature
in webhook-signature that is the base64 HMAC-SHA256 of `id.timestamp.body` under one of the
secrets' keys) and written as a JSON line to --log as it arrives: its id, the record's seq and kind, whether
it verified, how many signatures it carried, and what it was answered. The answer follows the
mode: `ok` (204), `fail` (500), or `hang` (no answer for --hang-seconds). --fail N and --hang N
answer the first requests so before the mode; POST /control {"mode": ...} changes the mode.
With --tls CERT KEY it serves https.
"""

import argparse
import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def verify(secrets, msg_id, timestamp, body, signatures):
    if not msg_id or not timestamp:
        return False
    try:
        if abs(time.time() - int(timestamp)) > 300:
            return False
    except ValueError:
        return False
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + body
    for secret in secrets:
        key = base64.b64decode(secret[len("whsec_"):])
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        for sig in signatures.split(" "):
            version, _, value = sig.partition(",")
            if version == "v1" and hmac.compare_digest(value, expected):
                return True
    return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--secrets", required=True, help="comma-separated whsec_ secrets")
    parser.add_argument("--fail", type=int, default=0)
    parser.add_argument("--hang", type=int, default=0)
    parser.add_argument("--hang-seconds", type=float, default=2.0)
    parser.add_argument("--mode", default="ok")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve https with this certificate and key")
    args = parser.parse_args()
    state = {"mode": args.mode, "fail": args.fail, "hang": args.hang,
             "secrets": args.secrets.split(",")}
    lock = threading.Lock()
    log = open(args.log, "a", buffering=1)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.path == "/control":
                with lock:
                    state.update(json.loads(body))
                self.send_response(204)
                self.end_headers()
                return
            with lock:
                if state["fail"] > 0:
                    state["fail"] -= 1
                    mode = "fail"
                elif state["hang"] > 0:
                    state["hang"] -= 1
                    mode = "hang"
                else:
                    mode = state["mode"]
                secrets = list(state["secrets"])
            signatures = self.headers.get("webhook-signature", "")
            ok = verify(secrets, self.headers.get("webhook-id"), self.headers.get("webhook-timestamp"), body, signatures)
            try:
                record = json.loads(body)
            except ValueError:
                record = {}
            status = {"ok": 204, "fail": 500, "hang": 204}[mode]
            # Logged as it arrives, so the log is the order requests came in.
            with lock:
                log.write(json.dumps({"id": self.headers.get("webhook-id"), "seq": record.get("seq"),
                                      "kind": record.get("kind"), "verified": ok, "mode": mode,
                                      "signatures": len([s for s in signatures.split(" ") if s]),
                                      "status": status if ok else 401}) + "\n")
            if mode == "hang":
                time.sleep(args.hang_seconds)
            self.send_response(status if ok else 401)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if args.tls:
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls[0], args.tls[1])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
