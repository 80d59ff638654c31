"""The manual page (docs/funclatency.8) and the bash completion
(completions/funclatency.bash) against the built tool's --help (and each
command's, `funclatency report --help`, ...): an option added to --help but
not to the man page's OPTIONS or COMMANDS (or to the completion), or left in
the man page or the completion after leaving --help, fails here, and so does
an example at the end of --help that uses an option --help does not list. The page must also
format without a groff warning. No BPF: only --help and --version run."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_tool

ROOT = Path(__file__).resolve().parents[2]
MAN_PAGE = ROOT / "docs" / "funclatency.8"
COMPLETION = ROOT / "completions" / "funclatency.bash"

# "  -p,--pid INT:POSITIVE ..." / "  --json ..." in CLI11's Options: section.
HELP_OPTION = re.compile(r"^  (-[A-Za-z0-9-]+(?:,-[A-Za-z0-9-]+)*)")
OPTION_NAME = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][A-Za-z0-9-]*)")


def help_options(help_text: str) -> set:
    """Every option name (-p, --pid, ...) --help lists under Options:."""
    names = set()
    in_options = False
    for line in help_text.splitlines():
        if line.rstrip().endswith(":") and not line.startswith(" "):
            in_options = line.startswith("Options:")
            continue
        if not in_options:
            continue
        match = HELP_OPTION.match(line)
        if match:
            names.update(match.group(1).split(","))
    return names


def plain_text(groff_line: str) -> str:
    """A man source line with its font escapes and \\- hyphens made plain."""
    text = groff_line.replace("\\-", "-")
    text = re.sub(r"\\f[BIRP]|\\f\(\w\w|\\&|\\e", "", text)
    text = text.replace('"', " ")
    return re.sub(r"^\.(?:B|I|BR|BI|IR|IB|RB|RI)\s+", "", text)


def man_options(source: str) -> dict:
    """{section: option names of its .TP headings} for OPTIONS ("") and each
    ".SS funclatency NAME" of COMMANDS ("NAME"); the line after a .TP is its
    heading."""
    sections = {}
    current = None
    in_commands = False
    lines = source.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(".SH"):
            title = line.split(None, 1)[1:]
            current = "" if title == ["OPTIONS"] else None
            in_commands = title == ["COMMANDS"]
            continue
        if line.startswith(".SS") and in_commands:
            command = re.match(r"\.SS funclatency (\w+)", line)
            current = command.group(1) if command else None
            continue
        if current is not None and line.startswith(".TP") and index + 1 < len(lines):
            heading = plain_text(lines[index + 1])
            sections.setdefault(current, set()).update(OPTION_NAME.findall(heading))
    return sections


def subcommands(help_text: str) -> list:
    """The commands --help names ("  funclatency report RUN ...")."""
    return re.findall(r"^  funclatency ([a-z]+) ", help_text, re.MULTILINE)


def assert_same_options(in_help: set, in_man: set, where: str):
    missing = sorted(in_help - in_man)
    assert not missing, (f"{where} lists options the man page does not: {missing}; add a .TP "
                         f"entry for each to {MAN_PAGE}")
    stale = sorted(in_man - in_help)
    assert not stale, (f"{MAN_PAGE} documents options {where} does not have: {stale}; "
                       f"remove them or add them to the tool")


@pytest.fixture(scope="module")
def help_text(tool):
    result = run_tool(tool, ["--help"])
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_help_parser_finds_the_options(help_text):
    # Guards the parser itself: an empty set would make the tests below pass.
    options = help_options(help_text)
    assert {"-p", "--pid", "--json", "--otlp", "--prometheus", "--help", "--version"} <= options


def test_man_page_documents_every_help_option(help_text):
    assert_same_options(help_options(help_text), man_options(MAN_PAGE.read_text()).get("", set()),
                        "funclatency --help")


def test_man_page_documents_every_command_option(tool, help_text):
    documented = man_options(MAN_PAGE.read_text())
    for command in subcommands(help_text):
        result = run_tool(tool, [command, "--help"])
        assert result.returncode == 0, result.stderr
        assert command in documented, f"{MAN_PAGE} has no '.SS funclatency {command}' section"
        assert_same_options(help_options(result.stdout), documented[command],
                            f"funclatency {command} --help")


def test_completion_offers_every_long_option(tool, help_text):
    completion = COMPLETION.read_text()
    offered = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", completion))
    wanted = {n for n in help_options(help_text) if n.startswith("--")}
    for command in subcommands(help_text):
        assert re.search(rf"\b{command}\b", completion), f"{COMPLETION} does not offer {command}"
        command_help = run_tool(tool, [command, "--help"]).stdout
        wanted |= {n for n in help_options(command_help) if n.startswith("--")}
    missing = sorted(wanted - offered)
    assert not missing, f"{COMPLETION} does not offer {missing}"


def completion_option_lists(completion: str) -> set:
    """Every option word the completion offers: the words of `options="..."`
    and of each literal `compgen -W '...'` list that starts with a dash."""
    lists = re.findall(r'options="([^"]*)"', completion)
    lists += re.findall(r"compgen -W '([^']*)'", completion)
    return {word for words in lists for word in words.split() if word.startswith("-")}


def all_help_options(tool, help_text: str) -> set:
    """The options of --help and of every command's --help, short and long."""
    names = help_options(help_text)
    for command in subcommands(help_text):
        names |= help_options(run_tool(tool, [command, "--help"]).stdout)
    return names


def test_completion_offers_no_option_the_tool_lacks(tool, help_text):
    offered = completion_option_lists(COMPLETION.read_text())
    assert {"--pid", "-p", "--fail-if-slower", "--output"} <= offered, offered  # the parser works
    stale = sorted(offered - all_help_options(tool, help_text))
    assert not stale, f"{COMPLETION} offers options no --help lists: {stale}"


def test_help_ends_with_examples_that_use_real_options(help_text):
    # BCC's tools end their help with examples; ours too, and each example's
    # options must exist (a renamed option fails here, not in a user's shell).
    assert "EXAMPLES:" in help_text, help_text
    examples = help_text.rstrip()[help_text.rindex("EXAMPLES:"):].splitlines()[1:]
    assert examples and all(line.startswith("  ") for line in examples), \
        f"EXAMPLES: must be the last section of --help: {examples}"
    commands = [line.split("#")[0] for line in examples if line.strip().startswith("funclatency")]
    assert len(commands) >= 5, examples
    known = help_options(help_text)
    for command in commands:
        for word in command.split():
            option = word.split("=")[0]
            if re.fullmatch(r"--?[A-Za-z][A-Za-z0-9-]*", option):
                assert option in known, f"--help's example {command.strip()!r} uses {option}, " \
                                        "which --help does not list"


def test_man_page_formats_without_warnings():
    if shutil.which("groff") is None:
        pytest.fail("groff is not installed (scripts/setup installs man-db, which brings it)")
    result = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(MAN_PAGE)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_version_names_the_project_version(tool):
    cmake = (ROOT / "CMakeLists.txt").read_text()
    version = re.search(r"project\(funclatency VERSION ([0-9.]+)", cmake).group(1)
    result = run_tool(tool, ["--version"])
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(rf"funclatency {re.escape(version)}( \(git [0-9a-f]{{7,}}(, modified)?\))?\n",
                        result.stdout), result.stdout
    if (ROOT / ".git").exists() and shutil.which("git"):
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        revision = re.search(r"\(git ([0-9a-f]+)", result.stdout)
        assert revision and head.startswith(revision.group(1)), (result.stdout, head)


def complete(*words) -> list:
    """What bash offers for `words` (the last one being completed), with the
    bash-completion framework loaded as an interactive shell has it."""
    framework = Path("/usr/share/bash-completion/bash_completion")
    if not framework.is_file():
        pytest.fail(f"{framework} is missing (scripts/setup installs bash-completion)")
    line = " ".join(words)
    script = (f"source {framework}; source {COMPLETION}; "
              f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; "
              f"COMP_LINE={line!r}; COMP_POINT={len(line)}; _funclatency; "
              'printf "%s\\n" "${COMPREPLY[@]}"')
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return sorted(filter(None, result.stdout.splitlines()))


def test_completion_completes_in_bash():
    assert complete("funclatency", "--otlp-p") == ["--otlp-pid-attribute", "--otlp-protocol"]
    assert complete("funclatency", "--mode", "k") == ["kernel"]
    assert complete("funclatency", "--exit-probes", "") == ["auto", "ret", "uretprobe"]
    assert complete("funclatency", "diff", "--fail") == ["--fail-if-slower"]
    assert "root" in complete("funclatency", "--user", "roo")
