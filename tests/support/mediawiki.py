"""A real MediaWiki for the bot's tests: Debian's package, SQLite, served by ``php -S`` on 127.0.0.1.

The session fixture installs the packages when they are missing (the tests run
as root on Debian; elsewhere the MediaWiki tests are skipped, saying why, unless
the environment variable ``CI`` is set, where that is a failure), creates a
wiki named "Wikidata" in a temporary directory, a bot account with a
BotPassword and a human account (with a BotPassword too, so tests can edit as
a person through the API), the templates the forum uses ({{SPARQL}} with its
"Try it!" link, {{Q}}), and starts ``php -S`` in a process group of its own,
stopped whole at the end.

pywikibot reads its configuration once, when it is first imported, so the
port and the ``PYWIKIBOT_DIR`` with its ``user-config.py`` are fixed when
this module is imported (from ``tests/conftest.py``); the bot runs with that
directory, in the test process or as a process of its own
(:mod:`tests.support.bot_rig`).  Each test process (each pytest-xdist worker)
has a wiki of its own.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import http.cookiejar
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from tests.support.pygmentize import CLIENT as PYGMENTIZE, start as start_pygments

MEDIAWIKI = Path("/usr/share/mediawiki")
BOT_USER = "SpinachBot"
#: A sample of the real forum page: sections answered and not, signatures of every shape.
FORUM = (FIXTURES / "forum" / "request_a_query.wiki").read_text()
BOT_PASSWORD_NAME = "spinach"
BOT_PASSWORD = "0123456789abcdefghijklmnopqrstuv"
HUMAN_USER = "Alice"
HUMAN_PASSWORD_NAME = "browser"
HUMAN_PASSWORD = "abcdefghijklmnopqrstuv0123456789"

#: Wikidata's {{re}} (a redirect to {{ping}}) for one or two users: "@User:", each user page linked, which
#: notifies them.
RE_TEMPLATE = "@[[User:{{{1}}}|{{{1}}}]]{{#if:{{{2|}}}|, @[[User:{{{2}}}|{{{2}}}]]}}:"
#: The password of every other person's account (:meth:`MediaWiki.editor`) and of its BotPassword.
OTHER_PASSWORD = "otherpeople0123456789abcdefghijkl"
#: People other than Alice the tests edit as (:meth:`MediaWiki.editor`), made with the wiki, before its server
#: starts: an account made while the server runs may be read from a cache that has not seen it yet.
OTHER_USERS = ("Bob",)
SPARQL_TEMPLATE = (
    "{{#tag:syntaxhighlight|{{{query}}}|lang=sparql}}"
    "<span class=\"try-it\">[https://query.wikidata.org/#{{urlencode:{{{query}}}|PATH}} Try it!]</span>"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


PORT = _free_port()
WORKDIR = Path(tempfile.mkdtemp(prefix="spinach-mediawiki-"))
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)  # every process that imports this makes one
PYWIKIBOT_DIR = WORKDIR / "pywikibot"


def write_pywikibot_dir(directory: Path, api_url: str) -> Path:
    """A ``PYWIKIBOT_DIR`` for the bot account on the wiki at *api_url* (the test wiki, or a proxy in front)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "user-config.py").write_text(
        f"family_files['testwiki'] = {api_url!r}\n"
        "family = 'testwiki'\nmylang = 'testwiki'\n"
        f"usernames['testwiki']['testwiki'] = '{BOT_USER}'\n"
        f"password_file = {str(directory / 'user-password.py')!r}\n"
        # No pause between requests to the local wiki (pywikibot waits 0.1 s between reads by default).
        "put_throttle = 0\nminthrottle = 0\nmax_retries = 1\nretry_wait = 1\nretry_max = 2\nwrite_maxlag = 5\n"
        "user_agent_description = 'spinach-bot tests'\n"
    )
    password = directory / "user-password.py"
    password.write_text(f"('{BOT_USER}', BotPassword('{BOT_PASSWORD_NAME}', '{BOT_PASSWORD}'))\n")
    password.chmod(0o600)
    return directory


write_pywikibot_dir(PYWIKIBOT_DIR, f"http://127.0.0.1:{PORT}/api.php")
os.environ["PYWIKIBOT_DIR"] = str(PYWIKIBOT_DIR)


def unique(name: str) -> str:
    """A page name's part for one test, parametrized ones told apart (page titles are cut at 50 characters)."""
    return f"{name[:40]} {hashlib.sha256(name.encode()).hexdigest()[:8]}"


@dataclass
class MediaWiki:
    api_url: str
    directory: Path
    config_file: Path
    _human: HumanEditor | None = field(default=None, repr=False)
    _others: dict[str, HumanEditor] = field(default_factory=dict, repr=False)

    def php(self, script: str, *arguments: str, stdin: str | None = None) -> str:
        done = subprocess.run(["php", str(MEDIAWIKI / "maintenance" / script), *arguments], input=stdin,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "MW_CONFIG_FILE": str(self.config_file)})
        if done.returncode != 0:
            raise RuntimeError(f"{script} failed: {done.stdout}{done.stderr}")
        return done.stdout

    def human(self, api_url: str | None = None) -> HumanEditor:
        """The human account, logged in through the Action API (fast enough to race the bot)."""
        return HumanEditor.login(api_url or self.api_url)

    def editor(self, user: str) -> HumanEditor:
        """Someone other than Alice (*user*, e.g. Bob), editing through the Action API as a person does: one of
        :data:`OTHER_USERS`, made with the wiki, or an account made at first use, once per wiki."""
        if user not in self._others and user not in OTHER_USERS:
            try:
                self.php("createAndPromote.php", user, OTHER_PASSWORD)
                self.php("createBotPassword.php", "--appid", "edit", "--grants", "basic,editpage,createeditmovepage",
                         user, OTHER_PASSWORD)
            except RuntimeError as error:  # made by an earlier test of this wiki
                assert "exists" in str(error), error
        if user not in self._others:
            self._others[user] = HumanEditor.login(self.api_url, user, "edit", OTHER_PASSWORD)
        return self._others[user]

    def fresh_forum(self, name: str) -> str:
        """A new Request a query page holding the sample forum, and an empty stop page; its title.

        One page per test, so tests do not see each other's replies.
        """
        title = f"Wikidata:Request a query/{name[:60]}"
        self.edit_as_human(title, FORUM, "forum page")
        self.edit_as_human(f"User:{BOT_USER}/Stop", "", "clear the stop page")
        return title

    def edit_as_human(self, title: str, text: str, summary: str = "edit") -> None:
        """Save *text* as Alice, through the Action API (one login for the whole test process)."""
        if self._human is None:
            self._human = self.human()
        self._human.edit(title, text, summary)

    def api(self, **params: str) -> dict:
        query = urllib.parse.urlencode({"format": "json", "formatversion": "2", **params})
        with urllib.request.urlopen(f"{self.api_url}?{query}", timeout=30) as response:
            return json.load(response)

    def page_text(self, title: str) -> str:
        page = self.api(action="query", prop="revisions", rvprop="content", rvslots="main", titles=title)
        found = page["query"]["pages"][0]
        return "" if found.get("missing") else found["revisions"][0]["slots"]["main"]["content"]

    def revisions(self, title: str) -> list[dict]:
        page = self.api(action="query", prop="revisions", rvprop="ids|user|comment|flags", rvlimit="50",
                        titles=title)
        return page["query"]["pages"][0].get("revisions", [])

    def rendered_html(self, title: str) -> str:
        return self.api(action="parse", page=title, prop="text")["parse"]["text"]

    def categories(self, title: str) -> list[str]:
        """The categories MediaWiki puts *title* in, as its parser reads the page."""
        return [item["category"] for item in self.api(action="parse", page=title, prop="categories")["parse"][
            "categories"]]

    def render(self, wikitext: str) -> str:
        return self.api(action="parse", text=wikitext, contentmodel="wikitext", prop="text")["parse"]["text"]


#: The request header that sets the wiki's clock for that request alone (:meth:`HumanEditor.edit`'s *at*).
CLOCK_HEADER = "X-Test-Clock"
#: The test wiki reads its clock from that header (``HTTP_X_TEST_CLOCK`` to PHP) when a request carries one:
#: MediaWiki takes the timestamps it stores (a revision's, a recent change's) from ``ConvertibleTimestamp``,
#: whose clock tests may set.  The bot never sends it, and ``php -S`` runs the settings afresh for each request,
#: so no other request is touched.
CLOCK_SETTING = (
    "if ( isset( $_SERVER['HTTP_X_TEST_CLOCK'] ) ) {\n"
    "\tWikimedia\\Timestamp\\ConvertibleTimestamp::setFakeTime( $_SERVER['HTTP_X_TEST_CLOCK'] );\n"
    "}\n"
)

#: The server as a production one runs: compiled code kept (OPcache), and APCu for MediaWiki's object cache
#: (``CACHE_ACCEL``), which keeps SyntaxHighlight's Pygments output instead of running ``pygmentize`` again for
#: every ``{{SPARQL}}`` block of every parse.  The forked workers share both.  Sessions stay in the database:
#: APCu drops everything when it fills up, and a session lost that way made a logged-in editor's next save
#: an anonymous one.
PHP_SERVER_SETTINGS = ("-d", "opcache.enable_cli=1", "-d", "apc.enable_cli=1")


@dataclass
class PhpServer:
    """``php -S`` in a process group of its own: its forked workers (``PHP_CLI_SERVER_WORKERS``) stop with it."""

    process: subprocess.Popen
    log: object

    @classmethod
    def start(cls, port: int, config_file: Path, log_path: Path, workers: int = 4) -> PhpServer:
        log = log_path.open("w")
        process = subprocess.Popen(["php", *PHP_SERVER_SETTINGS, "-S", f"127.0.0.1:{port}", "-t", str(MEDIAWIKI)],
                                   stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                   env={**os.environ, "MW_CONFIG_FILE": str(config_file),
                                        "PHP_CLI_SERVER_WORKERS": str(workers)})
        return cls(process, log)

    @property
    def group(self) -> int:
        return self.process.pid  # the leader of its own session and process group

    def stop(self) -> None:
        """Stop the whole group (workers too), politely, then for good."""
        for sig, patience in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.group, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + patience
            while group_members(self.group) and time.monotonic() < deadline:
                self.process.poll()
                time.sleep(0.05)
            if not group_members(self.group):
                break
        self.process.wait(timeout=10)
        self.log.close()


def group_members(group: int) -> list[int]:
    """Live (not zombie) processes of process group *group*, read from ``/proc``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == group:
            members.append(int(stat.parent.name))
    return members


@dataclass
class HumanEditor:
    """Alice, editing through the Action API with her BotPassword, as a person's browser session would."""

    api_url: str
    opener: urllib.request.OpenerDirector

    @classmethod
    def login(cls, api_url: str, user: str = HUMAN_USER, password_name: str = HUMAN_PASSWORD_NAME,
              password: str = HUMAN_PASSWORD) -> HumanEditor:
        """*user* (Alice unless said), logged in with the BotPassword *password_name*."""
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        editor = cls(api_url, opener)
        token = editor.call(action="query", meta="tokens", type="login")["query"]["tokens"]["logintoken"]
        done = editor.call(post=True, action="login", lgname=f"{user}@{password_name}",
                           lgpassword=password, lgtoken=token)
        assert done["login"]["result"] == "Success", done
        return editor

    def call(self, post: bool = False, headers: dict[str, str] | None = None, **params: str) -> dict:
        data = urllib.parse.urlencode({"format": "json", "formatversion": "2", **params})
        if post:
            request = urllib.request.Request(self.api_url, data=data.encode(), headers=headers or {})
        else:
            request = urllib.request.Request(f"{self.api_url}?{data}", headers=headers or {})
        with self.opener.open(request, timeout=60) as response:
            return json.load(response)

    def edit(self, title: str, text: str, summary: str = "human edit", at: str | None = None) -> dict:
        """Save *text*; returns MediaWiki's ``edit`` result (``newrevid``, ``newtimestamp``).

        *at* (a timestamp MediaWiki reads, e.g. another edit's ``newtimestamp``) is the time the wiki stamps this
        edit with, whenever it is made: two edits in the same second, however slow the machine.
        """
        token = self.call(action="query", meta="tokens")["query"]["tokens"]["csrftoken"]
        done = self.call(post=True, headers={CLOCK_HEADER: at} if at else None, action="edit", title=title,
                         text=text, summary=summary, token=token)
        assert done.get("edit", {}).get("result") == "Success", done
        return done["edit"]


def _unavailable(reason: str) -> None:
    """Skip the MediaWiki tests, saying why; in CI (``CI`` set) a missing wiki is a failure."""
    if os.environ.get("CI"):
        pytest.fail(f"MediaWiki is required in CI: {reason}")
    pytest.skip(f"no real MediaWiki for these tests: {reason}")


def _install_packages() -> None:
    """Debian's packages, installed once: test processes running side by side (pytest-xdist) take turns."""
    with open(Path(tempfile.gettempdir()) / "spinach-mediawiki-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _install_packages_now()


def _install_packages_now() -> None:
    if (MEDIAWIKI / "maintenance" / "install.php").exists() and shutil.which("php"):
        return
    if not Path("/etc/debian_version").exists() or not shutil.which("apt-get"):
        _unavailable("MediaWiki is not installed and this is not Debian (the fixture installs Debian's package)")
    if os.geteuid() != 0:
        _unavailable("MediaWiki is not installed and installing Debian's package needs root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "mediawiki", "php-sqlite3", "php-cli"]):
        done = subprocess.run(command, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
                              timeout=900)
        if done.returncode != 0:
            _unavailable(f"cannot install MediaWiki ({' '.join(command)}): {done.stderr[-2000:]}")


@pytest.fixture(scope="session")
def mediawiki() -> MediaWiki:
    _install_packages()
    directory = WORKDIR / "wiki"
    (directory / "data").mkdir(parents=True)
    config_file = directory / "LocalSettings.php"
    wiki = MediaWiki(api_url=f"http://127.0.0.1:{PORT}/api.php", directory=directory, config_file=config_file)
    done = subprocess.run(
        ["php", str(MEDIAWIKI / "maintenance" / "install.php"), "--dbtype=sqlite", f"--dbpath={directory / 'data'}",
         "--dbname=wiki", f"--server=http://127.0.0.1:{PORT}", "--scriptpath=", "--lang=en",
         "--pass=AdminPassword123", f"--confpath={directory}", "Wikidata", "Admin"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "MW_CONFIG_FILE": str(config_file)})
    if done.returncode != 0:
        pytest.fail(f"MediaWiki install.php failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    highlighter = directory / "pygments.sock"
    pygments = start_pygments(highlighter, directory / "pygments.log")
    try:
        pygmentize = directory / "pygmentize"
        pygmentize.write_text(PYGMENTIZE.format(socket=str(highlighter)))
        pygmentize.chmod(0o755)
        with config_file.open("a") as settings:
            settings.write(
                "\n$wgMetaNamespace = 'Wikidata';\n"
                "wfLoadExtension( 'SyntaxHighlight_GeSHi' );\nwfLoadExtension( 'ParserFunctions' );\n"
                "wfLoadExtension( 'Cite' );\nwfLoadExtension( 'Poem' );\nwfLoadExtension( 'TemplateData' );\n"
                "$wgEnableBotPasswords = true;\n$wgMainCacheType = CACHE_ACCEL;\n$wgSessionCacheType = CACHE_DB;\n"
                "$wgRateLimits = [];\n"
                f"$wgRawHtml = false;\n$wgPygmentizePath = '{pygmentize}';\n"
                + CLOCK_SETTING
            )
        wiki.php("createAndPromote.php", "--bot", BOT_USER, "BotAccountPassword123")
        wiki.php("createAndPromote.php", HUMAN_USER, "HumanAccountPassword123")
        wiki.php("createBotPassword.php", "--appid", BOT_PASSWORD_NAME, "--grants",
                 "basic,highvolume,editpage,createeditmovepage", BOT_USER, BOT_PASSWORD)
        wiki.php("createBotPassword.php", "--appid", HUMAN_PASSWORD_NAME, "--grants",
                 "basic,editpage,createeditmovepage", HUMAN_USER, HUMAN_PASSWORD)
        for user in OTHER_USERS:
            wiki.php("createAndPromote.php", user, OTHER_PASSWORD)
            wiki.php("createBotPassword.php", "--appid", "edit", "--grants", "basic,editpage,createeditmovepage",
                     user, OTHER_PASSWORD)
        server = PhpServer.start(PORT, config_file, directory / "server.log")
        deadline = time.monotonic() + 300  # a busy machine is slow to start it; a server that died ends the wait
        while True:
            try:
                wiki.api(action="query", meta="siteinfo")
                break
            except OSError:
                if time.monotonic() > deadline or server.process.poll() is not None:
                    server.stop()
                    pytest.fail(f"MediaWiki did not start: {(directory / 'server.log').read_text()[-2000:]}")
                time.sleep(0.2)
        wiki.edit_as_human("Template:SPARQL", SPARQL_TEMPLATE, "the forum's query template")
        wiki.edit_as_human("Template:Q", "{{{1}}}", "entity template")
        wiki.edit_as_human("Template:Re", RE_TEMPLATE, "the forum's template that notifies a user")
        yield wiki
        server.stop()
    finally:  # the highlighter goes with the wiki, even one that never started
        pygments.kill()
        pygments.wait(timeout=10)
