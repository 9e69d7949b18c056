"""§10: a client that has not sent a complete request head within 30 s is disconnected,
and a slow or silent client never blocks the others. Takes about 30 s of waiting."""
import json
import socket
import threading
import time
import unittest

import support


def slow_client(port, dribble, outcome):
    """Open a connection, send a partial head (and, if dribble, one more header line
    every 2 s); record when and how the server ended it."""
    began = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port))
    try:
        if dribble:
            sock.sendall(b"GET / HTTP/1.1\r\n")
        while time.monotonic() - began < 45:
            sock.settimeout(2)
            try:
                data = sock.recv(4096)
            except socket.timeout:
                if dribble:
                    sock.sendall(b"X-Slow: 1\r\n")
                continue
            except ConnectionResetError:
                data = b""
            outcome["closed_after"] = time.monotonic() - began
            outcome["data"] = data
            return
        outcome["closed_after"] = None
    finally:
        sock.close()


class HeadDeadlineTest(unittest.TestCase):
    def test_incomplete_heads_are_cut_at_30_seconds(self):
        repo = support.make_repo(self)
        server = support.HttpServer(repo)
        self.addCleanup(server.stop)
        outcomes = [{}, {}]
        threads = [threading.Thread(target=slow_client, args=(server.port, dribble, outcome))
                   for dribble, outcome in zip((True, False), outcomes)]
        for thread in threads:
            thread.start()
        time.sleep(1)
        began = time.monotonic()
        status, _, body = server.request("GET", "/api/v1/objects")
        self.assertEqual(status, 200)
        self.assertLess(time.monotonic() - began, 1.0, "a slow client blocked another")
        self.assertEqual(json.loads(body.decode())["count"], 9)
        for thread in threads:
            thread.join(60)
        for outcome in outcomes:
            self.assertIsNotNone(outcome.get("closed_after"), "still open after 45 s")
            self.assertGreaterEqual(outcome["closed_after"], 29.0)
            self.assertLess(outcome["closed_after"], 35.0)
            self.assertEqual(outcome["data"], b"", "an incomplete head gets no answer")
        status, _, _ = server.request("GET", "/")
        self.assertEqual(status, 200)


if __name__ == "__main__":
    unittest.main()
