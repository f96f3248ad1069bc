#!/bin/sh
# hold-port.sh PORT COMMAND...: runs COMMAND while PORT is bound and listening on 0.0.0.0 (the
# listening socket is inherited by COMMAND), to test what a command does with a port in use.
port=$1
shift
exec /usr/bin/python3 -c '
import os, socket, sys
s = socket.socket()
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen()
os.set_inheritable(s.fileno(), True)
os.execvp(sys.argv[2], sys.argv[2:])
' "$port" "$@"
