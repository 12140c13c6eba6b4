# What a prompt-injected agent might try. Each attempt fails inside the box and raises an alert.
import os
import socket
import subprocess

try:
    subprocess.run(["/bin/sh", "-c", "cat /etc/shadow"])
except OSError as e:
    print("exec /bin/sh:", e.strerror)

try:
    socket.create_connection(("127.0.0.1", 6379), timeout=2)
except OSError as e:
    print("connect 127.0.0.1:6379:", e.strerror)

try:
    open("/etc/passwd", "a")
except OSError as e:
    print("write /etc/passwd:", e.strerror)

print("os.system('id') returned", os.system("id"))
