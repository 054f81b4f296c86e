"""docs/exporters.md and dr.contract must not drift apart (datasette's hook-docs test).

The document carries the contract as Python stubs in fenced blocks whose first line is
`# dr.contract`. For every public class of dr.contract's modules and every member defined in
it (methods, properties, class attributes, enum members, dataclass fields, module constants),
the stub must exist with the same signature, annotations and defaults as the code, and the
name must also be explained in the prose. Stubs for things the code does not have fail too.
The example plugin in the document is loaded through the real registry and run against the
real sink and reader, and every built-in exporter registered in pyproject.toml must be listed.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
import re
import contextlib
import sqlite3
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pydantic
import pytest

import dr.contract as contract
from dr.contract import pod_needs
from tests.plugins.installing import forget_modules

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "exporters.md"
MARK = "# dr.contract"
EXAMPLE_MARK = "# example: acme_dr/sqlite.py"
# what the stubs' defaults evaluate in: the names every module of the contract sees
NAMESPACE = {name: value for module in ("exporter", "declarations", "capabilities", "pod_needs")
             for name, value in vars(importlib.import_module(f"dr.contract.{module}")).items()} | vars(contract)


# -- reading the document -------------------------------------------------------------------------
def _fenced(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", DOC.read_text(), re.M | re.S)


def _prose() -> str:
    return re.sub(r"^```.*?^```", "", DOC.read_text(), flags=re.M | re.S)


def _doc_stubs() -> tuple[dict[str, ast.ClassDef], dict[str, ast.expr]]:
    classes: dict[str, ast.ClassDef] = {}
    constants: dict[str, ast.expr] = {}
    for block in _fenced("python"):
        if not block.startswith(MARK):
            continue
        for node in ast.parse(block).body:
            if isinstance(node, ast.ClassDef):
                assert node.name not in classes, f"{node.name} is stubbed twice in docs/exporters.md"
                classes[node.name] = node
            elif isinstance(node, ast.Assign):
                constants[node.targets[0].id] = node.value
    return classes, constants


# -- reading the code -----------------------------------------------------------------------------
def _code_tree() -> ast.Module:
    """dr.contract: its package module and the modules it re-exports (the required exporter, the
    declarations, the capabilities, the pod needs)."""
    from dr.contract import capabilities, declarations, exporter

    tree = ast.parse(Path(contract.__file__).read_text())
    for module in (exporter, declarations, capabilities, pod_needs):
        tree.body += ast.parse(Path(module.__file__).read_text()).body
    return tree


def _public(name: str) -> bool:
    return not name.startswith("_") or name == "__init__"


def _members(cls: ast.ClassDef) -> dict[str, ast.stmt]:
    """Public members a class body defines: functions, annotated and plain assignments."""
    out: dict[str, ast.stmt] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            name = node.name
        elif isinstance(node, ast.AnnAssign):
            name = node.target.id
        elif isinstance(node, ast.Assign):
            name = node.targets[0].id
        else:
            continue
        if _public(name):
            out[name] = node
    return out


CODE_CLASSES = {n.name: n for n in _code_tree().body if isinstance(n, ast.ClassDef) and _public(n.name)}
CODE_CONSTANTS = [n.targets[0].id for n in _code_tree().body
                  if isinstance(n, ast.Assign) and not n.targets[0].id.startswith("_")]
MEMBERS = [(c, m) for c, node in CODE_CLASSES.items() for m in _members(node)]


# -- comparing ------------------------------------------------------------------------------------
def _norm(annotation) -> str:
    if annotation is inspect.Parameter.empty or annotation is None:
        return ""
    text = annotation if isinstance(annotation, str) else ast.unparse(annotation) \
        if isinstance(annotation, ast.AST) else inspect.formatannotation(annotation)
    return ast.unparse(ast.parse(text, mode="eval"))


def _doc_parameters(fn: ast.FunctionDef) -> list[tuple[str, str, str, ast.expr | None]]:
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [(arg.arg, "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD",
            _norm(arg.annotation), default) for i, (arg, default) in enumerate(zip(positional, defaults))]
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL", _norm(a.vararg.annotation), None))
    out += [(arg.arg, "KEYWORD_ONLY", _norm(arg.annotation), d) for arg, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD", _norm(a.kwarg.annotation), None))
    return out


def _same_default(value, expr: ast.expr | None) -> bool:
    if expr is None:
        return False
    if inspect.isfunction(value) and value.__name__ == "<lambda>":
        return isinstance(expr, ast.Lambda) and \
            [a.arg for a in expr.args.args] == list(inspect.signature(value).parameters)
    return eval(compile(ast.Expression(expr), "<doc>", "eval"), NAMESPACE) == value


def _check_signature(where: str, function, stub: ast.FunctionDef) -> None:
    signature = inspect.signature(function)
    code = [(p.name, p.kind.name, _norm(p.annotation)) for p in signature.parameters.values()]
    doc = _doc_parameters(stub)
    shown = f"docs/exporters.md: def {stub.name}({ast.unparse(stub.args)})" + \
        (f" -> {ast.unparse(stub.returns)}" if stub.returns else "") + f"\ncode: {stub.name}{signature}"
    assert [d[:3] for d in doc] == code, f"{where}: parameters differ\n{shown}"
    assert _norm(stub.returns) == _norm(signature.return_annotation), f"{where}: return type differs\n{shown}"
    for param, (_, _, _, expr) in zip(signature.parameters.values(), doc):
        if param.default is inspect.Parameter.empty:
            assert expr is None, f"{where}: the doc gives {param.name} a default the code has not\n{shown}"
        else:
            assert _same_default(param.default, expr), f"{where}: default of {param.name} differs\n{shown}"


def _check_field(where: str, cls: type, name: str, code: ast.AnnAssign, stub: ast.AnnAssign) -> None:
    assert _norm(stub.annotation) == _norm(code.annotation), \
        f"{where}: doc says {ast.unparse(stub.annotation)}, code says {ast.unparse(code.annotation)}"
    fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    if name in fields and fields[name].default_factory is not dataclasses.MISSING:
        keywords = {k.arg: k.value for k in getattr(stub.value, "keywords", [])}
        assert _same_default(fields[name].default_factory, keywords.get("default_factory")), \
            f"{where}: the doc must say field(default_factory={fields[name].default_factory.__name__})"
    elif code.value is None:
        assert stub.value is None, f"{where}: the doc gives a default the code has not"
    else:
        value = fields[name].default if name in fields else getattr(cls, name)
        assert _same_default(value, stub.value), f"{where}: the doc's default differs from the code's"


def _decorators(node: ast.stmt) -> set[str]:
    return {ast.unparse(d) for d in getattr(node, "decorator_list", [])}


def _mentioned(name: str) -> bool:
    return bool(re.search(rf"`[^`\n]*\b{re.escape(name)}\b[^`\n]*`", _prose()))


# -- the tests ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CODE_CLASSES))
def test_every_contract_class_is_stubbed_and_explained(name):
    classes, _ = _doc_stubs()
    assert name in classes, f"docs/exporters.md has no `{MARK}` stub for class {name}"
    assert _mentioned(name), f"docs/exporters.md never explains {name} outside its stub"
    code_bases = [ast.unparse(b) for b in CODE_CLASSES[name].bases]
    assert [ast.unparse(b) for b in classes[name].bases] == code_bases
    assert _decorators(classes[name]) == _decorators(CODE_CLASSES[name])


@pytest.mark.parametrize("cls_name, member", MEMBERS, ids=[f"{c}.{m}" for c, m in MEMBERS])
def test_every_member_matches_the_code(cls_name, member):
    where = f"{cls_name}.{member}"
    code = _members(CODE_CLASSES[cls_name])[member]
    stubbed = _doc_stubs()[0].get(cls_name)
    assert stubbed is not None, f"docs/exporters.md has no `{MARK}` stub for class {cls_name}"
    stub = _members(stubbed).get(member)
    assert stub is not None, f"docs/exporters.md: the stub of {cls_name} lacks {member}"
    assert type(stub) is type(code), f"{where}: the doc declares it differently from the code"
    assert _mentioned(member), f"docs/exporters.md never explains `{member}` ({where}) outside the stub"
    cls = getattr(contract, cls_name)
    if isinstance(code, ast.FunctionDef):
        assert _decorators(stub) == _decorators(code), f"{where}: decorators differ"
        live = inspect.getattr_static(cls, member)
        live = live.fget if isinstance(live, property) else getattr(live, "__func__", live)
        _check_signature(where, live, stub)
    elif isinstance(code, ast.AnnAssign):
        _check_field(where, cls, member, code, stub)
    else:
        value = cls[member].value if issubclass(cls, enum.Enum) else getattr(cls, member)
        assert _same_default(value, stub.value), f"{where}: the doc says {ast.unparse(stub.value)}"


@pytest.mark.parametrize("name", CODE_CONSTANTS)
def test_module_constants_match(name):
    _, constants = _doc_stubs()
    assert name in constants, f"docs/exporters.md does not state {name}"
    assert _same_default(getattr(contract, name), constants[name]), f"{name} differs from the code"
    assert _mentioned(name)


def test_the_doc_stubs_nothing_the_code_lacks():
    classes, constants = _doc_stubs()
    assert set(classes) <= set(CODE_CLASSES), f"stubs for unknown classes: {set(classes) - set(CODE_CLASSES)}"
    assert set(constants) <= set(CODE_CONSTANTS)
    for name, stub in classes.items():
        extra = set(_members(stub)) - set(_members(CODE_CLASSES[name]))
        assert not extra, f"docs/exporters.md stubs {name} members the code lacks: {sorted(extra)}"


def test_every_builtin_exporter_is_listed():
    entry_points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["dr.exporters"]
    text = DOC.read_text()
    assert entry_points, "pyproject.toml registers no dr.exporters"
    for name, value in entry_points.items():
        assert f"`{name}`" in text and f"`{value}`" in text, \
            f"built-in exporter {name} ({value}) is not listed in docs/exporters.md"


# -- the example plugin works through the real registry, sink and reader --------------------------
@pytest.fixture
def example_exporter(tmp_path, monkeypatch):
    from dr.contract.registry import GROUP, Registry

    (source,) = [b for b in _fenced("python") if b.startswith(EXAMPLE_MARK)]
    package = tmp_path / "plugin" / "acme_dr"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sqlite.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path / "plugin"))
    forget_modules("acme_dr")  # another test may have imported its own acme_dr package
    (snippet,) = [b for b in _fenced("toml") if "dr.exporters" in b]
    ((name, value),) = tomllib.loads(snippet)["project"]["entry-points"][GROUP].items()
    return Registry([EntryPoint(name, value, GROUP)]).get(name)


def test_example_plugin_backs_up_and_restores(example_exporter, tmp_path):
    from dr.repository.reading import ArtifactReader

    with pytest.raises(pydantic.ValidationError):
        example_exporter.Options.model_validate({"databases": [], "databse": "typo"})
    plan_dir = tmp_path / "plan"
    (plan_dir / "data").mkdir(parents=True)
    with sqlite3.connect(plan_dir / "data" / "billing.sqlite") as db:
        db.execute("create table invoices (id integer primary key, total integer)")
        db.execute("insert into invoices (total) values (42)")
    db.close()
    exporter, repo, backup = _example_backup(example_exporter, tmp_path, ["data/billing.sqlite"], plan_dir)
    assert [d.identity for d in exporter.discover()] == ["data/billing.sqlite"]

    artifacts, _ = backup()
    _, stats = backup(artifacts)
    assert stats["artifacts_reused"] == 1  # the change token held: the database was not copied again

    dest = tmp_path / "restored"

    def restore(**request):
        outcomes = exporter.restore(artifacts, ArtifactReader(repo), contract.RestoreRequest(to=str(dest), **request))
        return [o.status for o in outcomes]

    assert restore(dry_run=True) == [contract.OutcomeStatus.PLANNED]
    assert restore() == [contract.OutcomeStatus.RESTORED]
    with sqlite3.connect(dest / "data" / "billing.sqlite") as db:
        assert db.execute("select total from invoices").fetchall() == [(42,)]
    db.close()
    assert restore() == [contract.OutcomeStatus.UNCHANGED]
    (dest / "data" / "billing.sqlite").write_bytes(b"something else")
    assert restore() == [contract.OutcomeStatus.CONFLICT]
    assert restore(overwrite=True) == [contract.OutcomeStatus.RESTORED]


# -- every option of every built-in exporter: a table row, and an example plan that validates ------
COMMON_SOURCE_KEYS = {"name", "type", "schedule", "rpo", "rto", "targets", "sensitivity"}


def _builtin_exporters() -> dict[str, type]:
    entry_points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["dr.exporters"]
    return {name: EntryPoint(name, value, "dr.exporters").load() for name, value in entry_points.items()}


def _exporter_doc(name: str) -> str:
    """The exporter's own page, docs/exporters/<name>.md."""
    own = ROOT / "docs" / "exporters" / f"{name}.md"
    assert own.is_file(), f"the {name} exporter has no page docs/exporters/{name}.md"
    return own.read_text()


def _nested_model(annotation) -> type[pydantic.BaseModel] | None:
    """The options model inside a field's type (X, list[X], X | None), if any."""
    if inspect.isclass(annotation) and issubclass(annotation, pydantic.BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _nested_model(arg)
        if found is not None:
            return found
    return None


def _option_paths(model: type[pydantic.BaseModel], prefix: str = "") -> list[str]:
    """Every option a plan may write: `name`, and `name[].sub` / `name.sub` inside nested models."""
    paths = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        paths.append(prefix + key)
        nested = _nested_model(info.annotation)
        if nested is not None:
            listed = "list" in str(info.annotation)
            paths += _option_paths(nested, f"{prefix}{key}{'[]' if listed else ''}.")
    return paths


def _rows(text: str) -> list[tuple[list[str], str]]:
    """Each table row: the backticked names of its first cell, and the whole row."""
    rows = []
    for line in text.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            rows.append((re.findall(r"`([^`]+)`", first), line))
    return rows


def _names(name: str, wanted: str) -> bool:
    """A first-cell name documents `wanted`: itself, or a variant (`auth.method: token`)."""
    return name == wanted or name.startswith((wanted + ":", wanted + " "))


def _documented(path: str, rows: list[tuple[list[str], str]]) -> bool:
    """A row names the option (alone or among several in its first cell); or, for an option
    with sub-options, rows name them (`aws.region`); or, for a sub-option, its parent's row (or
    a variant of it) mentions it (`zones[].axfr.tsig`: `name`, `secret_env` ...), or a
    sibling's first cell lists it as `.leaf`. `[]` may be left out."""
    for form in dict.fromkeys((path, path.replace("[]", ""))):
        parent, _, leaf = form.rpartition(".")
        for names, row in rows:
            if any(_names(n, form) or n.startswith((form + ".", form + "[].")) for n in names):
                return True
            if not parent:
                continue
            # the parent's own row, or a variant of it (`auth.method: token`), mentions it
            if any(_names(n, parent) or (n.startswith(parent + ".") and ":" in n) for n in names) \
                    and f"`{leaf}`" in row:
                return True
            if any(n.startswith(parent + ".") for n in names) and "." + leaf in names:
                return True  # a sibling's row lists it as `.leaf` (`zones[].axfr.server`, `.port`)
    return False


@pytest.mark.parametrize("name", sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())
                                        ["project"]["entry-points"]["dr.exporters"]))
def test_every_option_of_every_builtin_exporter_is_documented(name):
    cls = _builtin_exporters()[name]
    text = _exporter_doc(name)
    rows = _rows(text)
    missing = [p for p in _option_paths(cls.Options) if not _documented(p, rows)]
    assert not missing, (f"the {name} exporter's options {missing} have no row (| `option` | ...) in its "
                         f"documentation (docs/{name}.md or its section of docs/exporters.md)")


@pytest.mark.parametrize("name", sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())
                                        ["project"]["entry-points"]["dr.exporters"]))
def test_every_builtin_exporter_has_an_example_plan_that_validates(name):
    import yaml
    cls = _builtin_exporters()[name]
    examples = []
    for block in re.findall(r"^```yaml\n(.*?)^```", _exporter_doc(name), re.M | re.S):
        document = yaml.safe_load(block) or {}
        examples += [s for s in (document.get("sources") or []) if isinstance(s, dict) and s.get("type") == name]
    assert examples, f"the {name} exporter's documentation has no example plan (a yaml block with a " \
                     f"`sources:` entry of `type: {name}`)"
    for source in examples:
        cls.Options.model_validate({k: v for k, v in source.items() if k not in COMMON_SOURCE_KEYS})


# -- the example's four traps, each as a plugin author would meet it ---------------------------------
def _example_backup(example_exporter, tmp_path, databases: list[str], plan_dir):
    from dr.repository.catalogs import read_catalog
    from dr.repository.repositories import Repository
    from dr.repository.stores.local import LocalStore
    from dr.repository.writing import SnapshotWriter

    options = example_exporter.Options.model_validate({"databases": databases})
    exporter = example_exporter(contract.ExportContext("db", options, str(plan_dir)))
    repo = Repository(LocalStore(str(tmp_path / "repo")))
    if not (tmp_path / "repo").exists():
        repo.init()

    def backup(parent=()):
        writer = SnapshotWriter(repo, [])
        sink = writer.source("db", "sqlite", parent)
        exporter.export(sink)
        snapshot = writer.finish("plan", [sink.commit()])
        writer.close()
        return list(read_catalog(repo, snapshot.catalog)), writer.stats

    return exporter, repo, backup


def _wal_database(path) -> sqlite3.Connection:
    """A database in WAL mode, its connection left open (the application is running)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("pragma journal_mode=wal")
    db.execute("pragma wal_autocheckpoint=0")  # commits stay in the -wal file, as between checkpoints
    db.execute("create table t (v text)")
    db.execute("insert into t values ('first')")
    return db


@pytest.fixture
def wal_app(example_exporter, tmp_path):
    """(the running application's connection, exporter, repository, backup()) over a WAL database."""
    plan_dir = tmp_path / "plan"
    plan_dir.mkdir()
    live = _wal_database(plan_dir / "app.sqlite")
    try:
        yield (live, *_example_backup(example_exporter, tmp_path, ["app.sqlite"], plan_dir))
    finally:
        live.close()
    assert not list(plan_dir.glob("*.dr-partial"))


def test_example_sees_a_commit_that_only_the_wal_holds(wal_app):
    live, _, _, backup = wal_app
    first, _ = backup()
    live.execute("insert into t values ('second')")  # the database file itself does not change
    _, stats = backup(first)
    assert stats["artifacts_reused"] == 0, "the change token missed a commit in WAL mode"


def test_example_restores_into_a_live_wal_database_in_place(wal_app):
    from dr.repository.reading import ArtifactReader

    live, exporter, repo, backup = wal_app
    artifacts, _ = backup()

    def restore(**request):
        return [o.status for o in exporter.restore(artifacts, ArtifactReader(repo), contract.RestoreRequest(**request))]

    # in place, unchanged: the stored copy's bytes differ from the live file's, its rows do not
    assert restore() == [contract.OutcomeStatus.UNCHANGED]
    live.execute("insert into t values ('after the backup')")
    assert restore() == [contract.OutcomeStatus.CONFLICT]
    assert restore(overwrite=True) == [contract.OutcomeStatus.RESTORED]
    # the running application's connection sees the restored rows, and the database is sound
    assert live.execute("select v from t").fetchall() == [("first",)]
    assert live.execute("pragma integrity_check").fetchall() == [("ok",)]


def test_example_writes_an_absolute_identity_under_to(example_exporter, tmp_path):
    from dr.repository.reading import ArtifactReader

    plan_dir = tmp_path / "plan"
    (plan_dir / "abs").mkdir(parents=True)
    original = plan_dir / "abs" / "app.sqlite"
    with contextlib.closing(sqlite3.connect(original)) as db:
        db.execute("create table t (v text)")
        db.commit()
    exporter, repo, backup = _example_backup(example_exporter, tmp_path, [str(original)], plan_dir)
    artifacts, _ = backup()
    before = original.read_bytes()
    dest = tmp_path / "restored"
    outcomes = list(exporter.restore(artifacts, ArtifactReader(repo),
                                     contract.RestoreRequest(to=str(dest), overwrite=True)))
    assert [o.status for o in outcomes] == [contract.OutcomeStatus.RESTORED]
    assert (dest / str(original).lstrip("/")).exists() and original.read_bytes() == before


def test_example_gives_the_drill_fingerprints_of_its_rows(example_exporter, tmp_path):
    """`restored_content`: the same rows are the same fingerprint, whatever the bytes; changed or
    missing rows are not (dr drill fails the step then: tests/restore_planning/test_drill_content.py)."""
    from dr.repository.reading import ArtifactReader

    plan_dir = tmp_path / "plan"
    plan_dir.mkdir()
    with contextlib.closing(sqlite3.connect(plan_dir / "app.sqlite")) as db:
        db.execute("create table t (v text)")
        db.execute("insert into t values ('first')")
        db.commit()
    exporter, repo, backup = _example_backup(example_exporter, tmp_path, ["app.sqlite"], plan_dir)
    artifacts, _ = backup()
    request = contract.RestoreRequest(to=str(tmp_path / "restored"))

    def content():
        (one,) = exporter.restored_content(artifacts, ArtifactReader(repo), request)
        return one

    assert content().restored == "" and content().backed_up  # nothing restored yet
    list(exporter.restore(artifacts, ArtifactReader(repo), request))
    assert content().restored == content().backed_up
    with contextlib.closing(sqlite3.connect(tmp_path / "restored" / "app.sqlite")) as db:
        db.execute("delete from t")
        db.commit()
    assert content().restored != content().backed_up


# -- the model types a plugin author builds: stubbed as the code has them ---------------------------
def test_the_dependency_stub_matches_the_model():
    from dr.model import artifacts

    (block,) = [b for b in _fenced("python") if b.startswith("# dr.model.artifacts")]
    (stub,) = [n for n in ast.parse(block).body if isinstance(n, ast.ClassDef)]
    fields = [(f.target.id, ast.unparse(f.annotation), f.value and ast.literal_eval(f.value))
              for f in stub.body if isinstance(f, ast.AnnAssign)]
    code = [(f.name, f.type, None if f.default is dataclasses.MISSING else f.default)
            for f in dataclasses.fields(artifacts.Dependency)]
    assert stub.name == "Dependency" and fields == code
    assert artifacts.Dependency.__dataclass_params__.frozen and "@dataclass(frozen=True)" in block


def test_the_placement_section_names_every_domain_kind():
    from dr.model.domains import DOMAIN_KINDS

    prose = _prose()
    section = prose[prose.index("### How a reference is placed"):prose.index("### What the audit and the planner")]
    assert all(f"`{kind}`" in section for kind in DOMAIN_KINDS), DOMAIN_KINDS
