"""Netmiko through serialgate's SSH door, as an engineer's script reaches
a port behind a console server: ConnectHandler(device_type=
"terminal_server") with the person's key and the gateway's host key
pinned, then redispatch to cisco_ios and show version.

Usage: netmiko_ssh.py HOST PORT USER KEY_FILE KNOWN_HOSTS
Prints one JSON object: {"prompt": ..., "show_version": ...}.
"""

import json
import sys

from netmiko import ConnectHandler, redispatch


def main() -> None:
    host, port, user, key_file, known_hosts = sys.argv[1:6]
    conn = ConnectHandler(
        device_type="terminal_server",
        host=host,
        port=int(port),
        username=user,
        password="",
        use_keys=True,
        key_file=key_file,
        allow_agent=False,
        ssh_strict=True,
        system_host_keys=False,
        alt_host_keys=True,
        alt_key_file=known_hosts,
    )
    # The console: the door's own lines, then the switch's prompt once
    # the line is woken.
    conn.write_channel("\r")
    conn.read_until_pattern(pattern=r"SW1>", read_timeout=20)
    redispatch(conn, device_type="cisco_ios")
    prompt = conn.find_prompt()
    output = conn.send_command("show version")
    conn.disconnect()
    print(json.dumps({"prompt": prompt, "show_version": output}))


if __name__ == "__main__":
    main()
