"""A static call graph of the functions (``functions/<name>/app.py``) and the layer
(``layers/podium/podium``), down to the AWS client calls each function can make.

What a Lambda function may do is what its code can reach, so its IAM policy is derived
here rather than written by hand (``tests/unit/test_least_privilege.py`` compares the two).

* Calls are resolved by the types the code declares (mypy strict keeps them complete):
  parameters, return annotations, attributes set in ``__init__`` or declared on a class,
  properties. A call on a port (a ``Protocol`` of ``podium.ports``) goes to every layer
  class that implements the method. A call on a value whose type is not known goes to
  every method of that name in the layer: more than runs, never less.
* A function named without being called (a callback, ``lambda: ...``) counts as called;
  nested functions and lambdas are part of the function they are in.
* A call on a boto3 client (a ``mypy_boto3_<service>`` annotation, or ``boto3.client("<service>")``)
  is an AWS operation of that service. The layer hands no client to a library class that
  calls AWS on its behalf, so every call is one of these; the dynamic check of the test
  would find a call made any other way.
* What an operation touches is read off the requests the reachable code builds: a query
  whose request names ``IndexName`` reads the index; a transaction's actions are the
  ``Put``/``Update``/``Delete``/``ConditionCheck`` entries built for it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYER = ROOT / "layers" / "podium"
FUNCTIONS = ROOT / "functions"

# A call of one of these names on a value of unknown type is taken for a call on the dict,
# list, set or str it nearly always is (``response.get``, ``item.get``): following it to the
# layer's methods of the same name (``Tables.get``, ``Tables.update``) would grant every
# function that reads a dict GetItem. The dynamic check of the test is the guard here.
CONTAINER_METHODS = {
    name
    for container in (dict, list, set, frozenset, str, bytes, tuple)
    for name in dir(container)
    if not name.startswith("_")
}
TRANSACTION_ACTIONS = ("Put", "Update", "Delete", "ConditionCheck")
BUILTIN_NAMES = {
    "dict",
    "list",
    "set",
    "frozenset",
    "tuple",
    "str",
    "int",
    "float",
    "bool",
    "bytes",
    "object",
    "Decimal",
    "datetime",
    "date",
    "timedelta",
    "Sequence",
    "Mapping",
    "Iterable",
    "Iterator",
    "Callable",
}


# -- types ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Type:
    """What the analysis knows of a value: an instance of a layer class (``instance``), a
    module, a class or function named as a value, a boto3 client (``aws``), a container
    with its element types, or nothing (``unknown``)."""

    kind: str  # instance | module | classref | funcref | aws | container | builtin | unknown
    name: str = ""
    elements: tuple[Type, ...] = ()


UNKNOWN = Type("unknown")
BUILTIN = Type("builtin")
EXTERNAL = Type("external")  # made by code outside the layer (a library's result)


@dataclass
class FunctionInfo:
    qualname: str
    module: ModuleInfo = field(repr=False)
    node: ast.FunctionDef | ast.AsyncFunctionDef = field(repr=False)
    owner: ClassInfo | None = field(default=None, repr=False)

    @property
    def decorators(self) -> set[str]:
        return {ast.unparse(d).split("(")[0].split(".")[-1] for d in self.node.decorator_list}


@dataclass
class ClassInfo:
    qualname: str
    module: ModuleInfo = field(repr=False)
    node: ast.ClassDef = field(repr=False)
    methods: dict[str, FunctionInfo] = field(default_factory=dict, repr=False)
    bases: list[str] = field(default_factory=list)

    @property
    def is_protocol(self) -> bool:
        return any(ast.unparse(base).split(".")[-1] == "Protocol" for base in self.node.bases)


@dataclass
class ModuleInfo:
    name: str
    tree: ast.Module = field(repr=False)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    variables: dict[str, ast.expr] = field(default_factory=dict)


# -- what a function does -----------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    """One AWS client call: the service and the operation (boto3's snake_case name)."""

    service: str
    name: str


@dataclass
class Facts:
    """What one function's own body does (not what its callees do)."""

    calls: set[str] = field(default_factory=set)  # qualnames of layer functions
    operations: set[Operation] = field(default_factory=set)
    transaction_actions: set[str] = field(default_factory=set)
    queries_index: bool = False  # builds a query request naming IndexName (the rank index)
    queries_log_index: bool = False  # builds one naming schema.LOG_INDEX
    queries_table: bool = False  # builds a query request without one
    unresolved: set[str] = field(default_factory=set)


class Program:
    """The layer and the handlers, parsed; ``reach`` walks the graph from a handler."""

    def __init__(self) -> None:
        self.modules: dict[str, ModuleInfo] = {}
        for path in sorted((LAYER / "podium").rglob("*.py")):
            relative = path.relative_to(LAYER).with_suffix("")
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            self._add_module(".".join(parts), path)
        for path in sorted(FUNCTIONS.glob("*/app.py")):
            self._add_module(handler_module(path.parent.name), path)
        self.functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        for module in self.modules.values():
            self.classes.update({c.qualname: c for c in module.classes.values()})
            self.functions.update({f.qualname: f for f in module.functions.values()})
            for cls in module.classes.values():
                self.functions.update({m.qualname: m for m in cls.methods.values()})
        for cls in self.classes.values():
            cls.bases = [self._qualify(cls.module, ast.unparse(base)) for base in cls.node.bases]
        self._facts: dict[str, Facts] = {}

    # -- parsing ------------------------------------------------------------------------------

    def _add_module(self, name: str, path: Path) -> None:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module = ModuleInfo(name, tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):  # imports inside functions and TYPE_CHECKING blocks too
            if isinstance(node, ast.Import):
                for alias in node.names:
                    module.imports[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom):
                source = node.module or ""
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    source = f"{base}.{source}" if source else base
                for alias in node.names:
                    module.imports[alias.asname or alias.name] = f"{source}.{alias.name}"
        for statement in tree.body:
            if isinstance(statement, ast.ClassDef):
                cls = ClassInfo(f"{name}.{statement.name}", module, statement)
                for item in statement.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        cls.methods[item.name] = FunctionInfo(
                            f"{cls.qualname}.{item.name}", module, item, cls
                        )
                module.classes[statement.name] = cls
            elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                module.functions[statement.name] = FunctionInfo(f"{name}.{statement.name}", module, statement)
            elif isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        module.variables[target.id] = statement.value
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                module.variables[statement.target.id] = statement.value or statement.annotation
        self.modules[name] = module

    def _qualify(self, module: ModuleInfo, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        if head in module.imports:
            base = module.imports[head]
        elif head in module.classes or head in module.functions or head in module.variables:
            base = f"{module.name}.{head}"
        else:
            base = head
        return f"{base}.{rest}" if rest else base

    # -- names and types ----------------------------------------------------------------------

    def lookup(self, qualname: str) -> Type:
        """What a qualified name is: a layer module, class or function, a boto3 client's
        type stub, or something outside the analysis."""
        if qualname in self.modules:
            return Type("module", qualname)
        if qualname in self.classes:
            return Type("classref", qualname)
        if qualname in self.functions:
            return Type("funcref", qualname)
        if qualname.startswith("mypy_boto3_"):
            return Type("aws", qualname.split(".")[0].removeprefix("mypy_boto3_"))
        module, _, name = qualname.rpartition(".")
        if module in self.modules:  # a module-level variable
            expression = self.modules[module].variables.get(name)
            if expression is not None:
                return self.type_of(expression, self.modules[module], {})
        root = qualname.split(".")[0]
        if root in ("typing", "collections", "builtins") or "." not in qualname:
            return UNKNOWN  # Any, or a builtin function such as next() or sorted()
        if root not in ("podium", "functions"):
            return EXTERNAL
        return UNKNOWN

    def annotation(self, node: ast.expr | None, module: ModuleInfo) -> Type:
        """The type an annotation names (``X | None`` is ``X``; string annotations too)."""
        if node is None:
            return UNKNOWN
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.annotation(ast.parse(node.value, mode="eval").body, module)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            sides = [self.annotation(side, module) for side in (node.left, node.right)]
            known = [t for t in sides if t.kind != "none"]
            return known[0] if len(known) == 1 else UNKNOWN
        if isinstance(node, ast.Constant) and node.value is None:
            return Type("none")
        if isinstance(node, ast.Subscript):
            outer = ast.unparse(node.value).split(".")[-1]
            inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            arguments = tuple(self.annotation(element, module) for element in inner)
            if outer == "Optional":
                return arguments[0]
            return Type("container", outer, arguments)
        if isinstance(node, ast.Name | ast.Attribute):
            dotted = ast.unparse(node)
            if dotted.split(".")[-1] in BUILTIN_NAMES and dotted.split(".")[-1] not in module.classes:
                return BUILTIN
            named = self.lookup(self._qualify(module, dotted))
            if named.kind == "classref":
                return Type("instance", named.name)
            return named if named.kind == "aws" else UNKNOWN
        return UNKNOWN

    def returns(self, function: FunctionInfo) -> Type:
        if function.node.name == "__init__":
            return UNKNOWN
        return self.annotation(function.node.returns, function.module)

    def mro(self, qualname: str) -> Iterator[ClassInfo]:
        cls = self.classes.get(qualname)
        if cls is None:
            return
        yield cls
        for base in cls.bases:
            yield from self.mro(base)

    def attribute(self, cls_name: str, name: str) -> tuple[Type, list[FunctionInfo]]:
        """The type of ``instance.name`` and the functions that reading it runs (a property)."""
        for cls in self.mro(cls_name):
            method = cls.methods.get(name)
            if method is not None:
                if method.decorators & {"property", "cached_property"}:
                    return self.returns(method), [method]
                return Type("funcref", method.qualname), []
            declared = self._declared_attributes(cls).get(name)
            if declared is not None:
                return declared, []
        return UNKNOWN, []

    def _declared_attributes(self, cls: ClassInfo) -> dict[str, Type]:
        """Attributes annotated on the class (dataclass fields) or set on ``self`` in its
        methods (from an annotated parameter, a constructor, ``boto3.client``)."""
        cache: dict[str, dict[str, Type]] = self.__dict__.setdefault("_attribute_cache", {})
        if cls.qualname in cache:
            return cache[cls.qualname]
        found: dict[str, Type] = {}
        cache[cls.qualname] = found
        for item in cls.node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                found[item.target.id] = self.annotation(item.annotation, cls.module)
        for method in cls.methods.values():
            parameters = self._parameters(method)
            for node in ast.walk(method.node):
                targets: list[ast.expr] = []
                value: ast.expr | None = None
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets, value = [node.target], node.value
                    declared = self.annotation(node.annotation, cls.module)
                    if _is_self_attribute(node.target) and declared.kind != "unknown":
                        found[node.target.attr] = declared  # type: ignore[union-attr]
                        continue
                for target in targets:
                    if _is_self_attribute(target) and value is not None:
                        assigned = self.type_of(value, cls.module, parameters)
                        name = target.attr  # type: ignore[attr-defined]
                        # the most telling assignment wins (``boto3.client`` over ``None``)
                        if name not in found or found[name].kind in ("unknown", "builtin"):
                            found[name] = assigned
        return found

    def _parameters(self, function: FunctionInfo) -> dict[str, Type]:
        arguments = function.node.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        env = {a.arg: self.annotation(a.annotation, function.module) for a in every}
        if function.owner is not None and every and every[0].arg in ("self", "cls"):
            env[every[0].arg] = Type("instance", function.owner.qualname)
        return env

    def type_of(self, node: ast.expr, module: ModuleInfo, env: dict[str, Type]) -> Type:
        """The type of an expression, as far as the annotations tell."""
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            imported = module.imports.get(node.id, "")
            if imported and imported.split(".")[0] not in ("podium", "functions", "typing"):
                return EXTERNAL  # boto3, json, a Powertools class...
            return self.lookup(self._qualify(module, node.id))
        if isinstance(node, ast.Attribute):
            base = self.type_of(node.value, module, env)
            if base.kind == "module":
                return self.lookup(f"{base.name}.{node.attr}")
            if base.kind == "instance":
                return self.attribute(base.name, node.attr)[0]
            if base.kind in ("external", "aws"):
                return EXTERNAL
            return BUILTIN if base.kind in ("builtin", "container") else UNKNOWN
        if isinstance(node, ast.Call):
            if _is_boto3_client(node):
                return Type("aws", node.args[0].value)  # type: ignore[attr-defined]
            callee = self.type_of(node.func, module, env)
            if callee.kind == "classref":
                return Type("instance", callee.name)
            if callee.kind == "funcref":
                return self.returns(self.functions[callee.name])
            if callee.kind in ("builtin", "container"):
                return BUILTIN
            if callee.kind == "external":
                return EXTERNAL
            return UNKNOWN
        if isinstance(node, ast.IfExp):  # ``x if ... else None``: the side that is something
            sides = [
                self.type_of(side, module, env)
                for side in (node.body, node.orelse)
                if not (isinstance(side, ast.Constant) and side.value is None)
            ]
            return sides[0] if len(set(sides)) == 1 else UNKNOWN
        if isinstance(node, ast.Subscript):
            base = self.type_of(node.value, module, env)
            if base.kind == "container" and base.elements:
                return base.elements[-1]
            if base.kind == "external":
                return EXTERNAL
            return BUILTIN if base.kind == "builtin" else UNKNOWN
        if isinstance(node, ast.Await):
            return self.type_of(node.value, module, env)
        if isinstance(
            node,
            ast.Constant
            | ast.JoinedStr
            | ast.Dict
            | ast.List
            | ast.Set
            | ast.Tuple
            | ast.ListComp
            | ast.DictComp
            | ast.SetComp
            | ast.Compare
            | ast.BoolOp,
        ):
            return BUILTIN
        return UNKNOWN

    # -- one function's own facts -------------------------------------------------------------

    def facts(self, qualname: str) -> Facts:
        if qualname not in self._facts:
            self._facts[qualname] = self._collect(self.functions[qualname])
        return self._facts[qualname]

    def module_facts(self, module_name: str) -> Facts:
        """What a module's top-level code does (a handler's decorators and wrappers)."""
        module = self.modules[module_name]
        key = f"{module_name}:<module>"
        if key not in self._facts:
            body = [s for s in module.tree.body if not isinstance(s, ast.FunctionDef | ast.ClassDef)]
            facts = Facts()
            self._scan(ast.Module(body=body, type_ignores=[]), module, {}, facts)
            facts.calls |= {f.qualname for f in module.functions.values()}
            self._facts[key] = facts
        return self._facts[key]

    def _collect(self, function: FunctionInfo) -> Facts:
        facts = Facts()
        env = self._parameters(function)
        self._scan(function.node, function.module, env, facts)
        if function.node.name == "__init__" and function.owner is not None:
            post_init = function.owner.methods.get("__post_init__")
            if post_init is not None:
                facts.calls.add(post_init.qualname)
        return facts

    def _scan(self, root: ast.AST, module: ModuleInfo, env: dict[str, Type], facts: Facts) -> None:
        # Local variables first, in source order, so later statements see their types.
        for node in ast.walk(root):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                arguments = node.args
                for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                    env.setdefault(a.arg, self.annotation(a.annotation, module) if a.annotation else UNKNOWN)
        for node in _in_order(root):
            if isinstance(node, ast.Assign):
                self._bind(node.targets, self.type_of(node.value, module, env), env)
            elif isinstance(node, ast.AnnAssign):
                declared = self.annotation(node.annotation, module)
                if declared.kind == "unknown" and node.value is not None:
                    declared = self.type_of(node.value, module, env)
                self._bind([node.target], declared, env)
            elif isinstance(node, ast.For | ast.comprehension):
                iterated = self.type_of(node.iter, module, env)
                element = (
                    iterated.elements[0] if iterated.kind == "container" and iterated.elements else UNKNOWN
                )
                if iterated.kind == "builtin":
                    element = UNKNOWN
                self._bind([node.target], element, env)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._bind([node.optional_vars], UNKNOWN, env)
        for node in ast.walk(root):
            if isinstance(node, ast.Dict):
                keys = {
                    k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
                }
                facts.transaction_actions |= keys & set(TRANSACTION_ACTIONS)
                if "KeyConditionExpression" in keys:
                    if "IndexName" in keys:
                        named = node.values[[getattr(k, "value", None) for k in node.keys].index("IndexName")]
                        if isinstance(named, ast.Attribute) and named.attr == "LOG_INDEX":
                            facts.queries_log_index = True
                        else:
                            facts.queries_index = True
                    else:
                        facts.queries_table = True
            if isinstance(node, ast.Call):
                self._call(node, module, env, facts)
            elif isinstance(node, ast.Attribute | ast.Name) and isinstance(node.ctx, ast.Load):
                self._reference(node, module, env, facts)

    def _bind(self, targets: list[ast.expr], value: Type, env: dict[str, Type]) -> None:
        for target in targets:
            if isinstance(target, ast.Name):
                if target.id not in env or env[target.id].kind == "unknown":
                    env[target.id] = value
            elif isinstance(target, ast.Tuple | ast.List):
                parts = value.elements if value.kind == "container" and value.name == "tuple" else ()
                for index, element in enumerate(target.elts):
                    part = parts[index] if index < len(parts) else UNKNOWN
                    self._bind([element], part, env)

    def _reference(
        self, node: ast.Attribute | ast.Name, module: ModuleInfo, env: dict[str, Type], facts: Facts
    ) -> None:
        """A function named as a value counts as called (a client's operation too:
        ``self.client.put_item`` handed to a helper); reading a property runs it."""
        if isinstance(node, ast.Attribute):
            base = self.type_of(node.value, module, env)
            if base.kind == "aws" and node.attr in aws_operations(base.name):
                facts.operations.add(Operation(base.name, node.attr))
            if base.kind == "instance":
                _, runs = self.attribute(base.name, node.attr)
                facts.calls |= {f.qualname for f in runs}
        named = self.type_of(node, module, env)
        if named.kind == "funcref":
            facts.calls |= self.targets(named.name)
        elif named.kind == "classref" and named.name in self.classes:
            facts.calls |= self._constructor(named.name)

    def _constructor(self, qualname: str) -> set[str]:
        for cls in self.mro(qualname):
            for name in ("__init__", "__post_init__"):
                if name in cls.methods:
                    return {cls.methods[name].qualname}
        return set()

    def _call(self, node: ast.Call, module: ModuleInfo, env: dict[str, Type], facts: Facts) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            client = self.type_of(func.value, module, env)
            if client.kind == "aws":
                if func.attr in aws_operations(client.name):
                    facts.operations.add(Operation(client.name, func.attr))
                return
        callee = self.type_of(func, module, env)
        if callee.kind == "classref":
            facts.calls |= self._constructor(callee.name)
            return
        if callee.kind == "funcref":
            facts.calls |= self.targets(callee.name)
            return
        if callee.kind == "external" or not isinstance(func, ast.Attribute):
            return
        if isinstance(func.value, ast.Call) and ast.unparse(func.value.func) == "super":
            me = env.get("self", UNKNOWN)
            bases = self.classes[me.name].bases if me.kind == "instance" else []
            for base in bases:
                found = next((c.methods[func.attr] for c in self.mro(base) if func.attr in c.methods), None)
                if found is not None:
                    facts.calls.add(found.qualname)
                    break
            return
        receiver = self.type_of(func.value, module, env)
        if receiver.kind == "instance":
            return  # a known class without such a method: a callable attribute (a clock)
        if receiver.kind == "unknown" and func.attr not in CONTAINER_METHODS:
            by_name = self.implementations(func.attr)
            if by_name:
                facts.unresolved.add(f"{ast.unparse(func)}")
            facts.calls |= by_name

    def targets(self, qualname: str) -> set[str]:
        """What calling a function runs: itself, or for a port's method, the method of
        every layer class that implements the port (has all of its methods)."""
        function = self.functions[qualname]
        port = function.owner
        if port is None or not port.is_protocol:
            return {qualname}
        wanted = set(port.methods)
        return {
            cls.methods[function.node.name].qualname
            for cls in self.classes.values()
            if not cls.is_protocol and wanted <= set(cls.methods)
        }

    def implementations(self, method: str) -> set[str]:
        """Every non-protocol layer method of that name (what a call on a value of unknown
        type may run)."""
        return {
            cls.methods[method].qualname
            for cls in self.classes.values()
            if method in cls.methods and not cls.is_protocol
        }

    # -- from a handler -----------------------------------------------------------------------

    def reach(self, code_dir: str) -> set[str]:
        """Every layer function a handler can run (its module's top level is where it starts)."""
        start = f"{handler_module(code_dir)}:<module>"
        seen: set[str] = set()
        pending = [*self.module_facts(handler_module(code_dir)).calls]
        seen.add(start)
        while pending:
            qualname = pending.pop()
            if qualname in seen:
                continue
            seen.add(qualname)
            pending.extend(self.facts(qualname).calls - seen)
        return seen

    def reached_facts(self, code_dir: str) -> list[Facts]:
        reached = self.reach(code_dir)
        module = handler_module(code_dir)
        return [
            self.module_facts(module) if name.endswith(":<module>") else self.facts(name) for name in reached
        ]


def handler_module(code_dir: str) -> str:
    return f"functions.{code_dir}.app"


def _is_self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _is_boto3_client(node: ast.Call) -> bool:
    return (
        ast.unparse(node.func) in ("boto3.client", "session.client")
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
    )


def _in_order(root: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``root`` in source order (``ast.walk`` is breadth-first)."""
    for child in ast.iter_child_nodes(root):
        yield child
        yield from _in_order(child)


_OPERATIONS: dict[str, set[str]] = {}


def aws_operations(service: str) -> set[str]:
    """boto3's method names of a service's operations (``get_item``, ``publish``)."""
    if service not in _OPERATIONS:
        import botocore.session
        from botocore import xform_name

        model = botocore.session.get_session().get_service_model(service)
        _OPERATIONS[service] = {xform_name(name) for name in model.operation_names}
    return _OPERATIONS[service]
