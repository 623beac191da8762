#!/usr/bin/env python3
"""push_receiver.py: a loopback-only HTTP receiver for preload_push_test.sh.

usage: push_receiver.py MODE DIR LIFETIME_S
  MODE good   store each POST body as DIR/N.body and its request line as
              DIR/N.line, answer 200
  MODE error  read the request, answer 500
  MODE slow   accept connections and never read or answer
Writes the port it listens on (127.0.0.1, chosen by the kernel) to
DIR/port, and exits after LIFETIME_S seconds whatever happens.
"""
import os
import socket
import sys
import threading
import time

mode, out, life = sys.argv[1], sys.argv[2], float(sys.argv[3])
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
with open(os.path.join(out, "port.tmp"), "w") as f:
    f.write(str(srv.getsockname()[1]))
os.rename(os.path.join(out, "port.tmp"), os.path.join(out, "port"))
held = []
count = 0


def read_request(c):
    c.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = c.recv(65536)
        if not chunk:
            return None, None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for h in lines[1:]:
        k, _, v = h.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
    while len(body) < length:
        chunk = c.recv(65536)
        if not chunk:
            break
        body += chunk
    return lines[0], body


def serve():
    global count
    while True:
        c, _ = srv.accept()
        if mode == "slow":
            held.append(c)
            continue
        try:
            line, body = read_request(c)
            if line is None:
                continue
            if mode == "good":
                n = count
                count += 1
                with open(os.path.join(out, "%d.body" % n), "wb") as f:
                    f.write(body)
                with open(os.path.join(out, "%d.line" % n), "w") as f:
                    f.write(line + "\n")
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            else:
                c.sendall(b"HTTP/1.1 500 Internal Server Error\r\n"
                          b"Content-Length: 0\r\n\r\n")
        except OSError:
            pass
        finally:
            c.close()


threading.Thread(target=serve, daemon=True).start()
time.sleep(life)
