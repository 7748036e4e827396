"""The rule file of the replay property tests (answer_property.py,
fleet_property.py): one UDP rule per algorithm, r0, r1, ..., told apart
by destination port (port0 + its index), all with one limit and window;
the token bucket refills the limit over the window."""


def rules_yaml(algos, port0, limit, window_ms):
    lines = ["rules:"]
    for i, algo in enumerate(algos):
        lines += [f"  - name: r{i}", "    protocol: udp",
                  f"    ports: {port0 + i}", f"    limit: {limit}",
                  f"    window: {window_ms}ms", f"    algorithm: {algo}"]
        if algo == "token-bucket":
            lines.append(f"    refill_per_s: {limit * 1000 / window_ms:g}")
    return "\n".join(lines) + "\n"
