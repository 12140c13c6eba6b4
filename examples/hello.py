import platform
import sys

print("hi from the sandbox")
print("python", platform.python_version(), "on", sys.platform)
