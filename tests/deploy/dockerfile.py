"""dockerfile.py: reads the project's Dockerfile for tests/deploy, so the
tests check what the Dockerfile says instead of repeating it.

Understands the subset the Dockerfile uses: FROM ... AS name, one instruction
per logical line (backslash continuations joined, comments dropped), JSON
(exec) form for ENTRYPOINT and CMD.

Example:
  df = Dockerfile.load("Dockerfile")
  rt = df.stage("runtime")
  rt.user()        # (10001, 10001)
  rt.entrypoint()  # ["/usr/local/bin/dedupd", "--listen=0.0.0.0:50051", ...]
"""
import json
import shlex


class DockerfileError(Exception):
    pass


class Stage:
    def __init__(self, name, base):
        self.name = name
        self.base = base
        self.instructions = []  # (KEYWORD, argument text)

    def all(self, keyword):
        return [arg for kw, arg in self.instructions if kw == keyword]

    def one(self, keyword):
        found = self.all(keyword)
        if len(found) != 1:
            raise DockerfileError(
                f"stage {self.name}: want exactly one {keyword}, found {len(found)}")
        return found[0]

    def _exec_form(self, keyword):
        text = self.one(keyword)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise DockerfileError(f"stage {self.name}: {keyword} must be JSON exec form: {e}")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DockerfileError(f"stage {self.name}: {keyword} must be a JSON list of strings")
        return value

    def entrypoint(self):
        return self._exec_form("ENTRYPOINT")

    def cmd(self):
        return self._exec_form("CMD") if self.all("CMD") else []

    def user(self):
        """USER as numeric (uid, gid); names are refused (Kubernetes'
        runAsNonRoot can only verify a numeric user)."""
        text = self.one("USER")
        uid, _, gid = text.partition(":")
        if not uid.isdigit() or (gid and not gid.isdigit()):
            raise DockerfileError(f"USER {text}: want numeric uid:gid")
        return int(uid), int(gid or uid)

    def volumes(self):
        out = []
        for text in self.all("VOLUME"):
            out += json.loads(text) if text.startswith("[") else text.split()
        return out

    def exposed_ports(self):
        return sorted(int(p.split("/")[0]) for text in self.all("EXPOSE") for p in text.split())

    def workdir(self):
        dirs = self.all("WORKDIR")
        return dirs[-1] if dirs else "/"

    def copies(self):
        """COPY lines as (from_stage or None, [sources], destination)."""
        out = []
        for text in self.all("COPY"):
            words = shlex.split(text)
            from_stage = None
            while words and words[0].startswith("--"):
                opt = words.pop(0)
                if opt.startswith("--from="):
                    from_stage = opt[len("--from="):]
                else:
                    raise DockerfileError(f"COPY {text}: option {opt} not understood")
            if len(words) < 2:
                raise DockerfileError(f"COPY {text}: want sources and a destination")
            out.append((from_stage, words[:-1], words[-1]))
        return out


class Dockerfile:
    def __init__(self, stages):
        self.stages = stages

    @staticmethod
    def load(path):
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        logical, current = [], ""
        for line in lines:
            stripped = line.strip()
            if not current and (not stripped or stripped.startswith("#")):
                continue
            if current and stripped.startswith("#"):
                continue  # a comment inside a continued instruction
            if stripped.endswith("\\"):
                current += stripped[:-1] + " "
                continue
            logical.append(current + stripped)
            current = ""
        if current:
            raise DockerfileError(f"{path}: file ends inside a continued line")
        stages = []
        for text in logical:
            keyword, _, arg = text.partition(" ")
            keyword, arg = keyword.upper(), arg.strip()
            if keyword == "FROM":
                words = arg.split()
                name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(stages))
                stages.append(Stage(name, words[0]))
            elif not stages:
                raise DockerfileError(f"{path}: {keyword} before FROM")
            else:
                stages[-1].instructions.append((keyword, arg))
        return Dockerfile(stages)

    def stage(self, name):
        for s in self.stages:
            if s.name == name:
                return s
        raise DockerfileError(f"no stage named {name}")

    def final(self):
        return self.stages[-1]


def parse_flags(args):
    """{'listen': '0.0.0.0:50051', ...} from ['--listen=0.0.0.0:50051', ...];
    a later flag overrides an earlier one, as Abseil does. Raises on anything
    that is not --name=value."""
    flags = {}
    for a in args:
        if not a.startswith("--") or "=" not in a:
            raise DockerfileError(f"argument {a!r}: want --name=value")
        name, _, value = a[2:].partition("=")
        flags[name] = value
    return flags


def port_of(host_port):
    host, sep, port = host_port.rpartition(":")
    if not sep or not port.isdigit():
        raise DockerfileError(f"{host_port!r}: want HOST:PORT")
    return int(port)
