"""Read infra/table.yaml as CloudFormation would: tags decoded, parameters and conditions resolved.

Only the intrinsic functions the template uses are resolved (Ref, Fn::If, Fn::Equals,
Fn::Not, Fn::Sub with plain ${Name} and ${Resource.Attribute} references); Fn::GetAtt
stays symbolic as ``"<Resource>.<Attribute>"``.  Anything else fails the test that meets it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cfnlint.decode import decode_str  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "infra" / "table.yaml"

PSEUDO = {
    "AWS::Region": "us-east-1",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::AccountId": "123456789012",
    "AWS::StackName": "xor-ack",
    "AWS::Partition": "aws",
}
_NO_VALUE = object()


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    template, errors = decode_str(path.read_text())
    assert not errors, errors
    assert template is not None
    plain: dict[str, Any] = _plain(template)
    return plain


def _plain(node: Any) -> Any:
    """cfn-lint's nodes (dict/str subclasses with positions) as plain dicts, lists and str."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, str):
        return str(node)
    return node


class Resolver:
    """Resolve a template's values for one set of parameter values."""

    def __init__(self, template: dict[str, Any], **parameters: str) -> None:
        self.template = template
        declared = template["Parameters"]
        unknown = set(parameters) - set(declared)
        assert not unknown, f"not template parameters: {unknown}"
        self.values: dict[str, Any] = {
            name: parameters.get(name, spec.get("Default")) for name, spec in declared.items()
        }
        self.values.update(PSEUDO)
        self.conditions = {
            name: bool(self.resolve(expr)) for name, expr in template.get("Conditions", {}).items()
        }

    def resolve(self, node: Any) -> Any:
        result = self._resolve(node)
        assert result is not _NO_VALUE
        return result

    def _resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            return [r for r in (self._resolve(v) for v in node) if r is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Ref":
                if arg == "AWS::NoValue":
                    return _NO_VALUE
                if arg in self.values:
                    return self.values[arg]
                assert arg in self.template["Resources"], f"Ref to unknown {arg}"
                return f"Ref:{arg}"
            if key == "Fn::GetAtt":
                parts = arg if isinstance(arg, list) else arg.split(".", 1)
                return f"{parts[0]}.{parts[1]}"
            if key == "Fn::If":
                name, when_true, when_false = arg
                return self._resolve(when_true if self.conditions[name] else when_false)
            if key == "Fn::Equals":
                left, right = (self.resolve(v) for v in arg)
                return str(left) == str(right)
            if key == "Fn::Not":
                return not self.resolve(arg[0])
            if key == "Fn::Sub":
                assert isinstance(arg, str), "only the one-string form of Fn::Sub is resolved"
                return re.sub(r"\$\{([^}!]+)\}", lambda m: self._sub(m[1]), arg)
            assert not key.startswith("Fn::"), f"{key} is not resolved by this helper"
        return {
            k: r for k, r in ((k, self._resolve(v)) for k, v in node.items()) if r is not _NO_VALUE
        }

    def _sub(self, name: str) -> str:
        """A ``${Name}`` of Fn::Sub: a parameter or resource, or ``${Resource.Attribute}``."""
        if "." in name and name.split(".", 1)[0] in self.template["Resources"]:
            return name  # symbolic, as Fn::GetAtt
        return str(self.resolve({"Ref": name}))

    def resource(self, name: str) -> dict[str, Any]:
        """The resource with its Properties resolved."""
        resource = dict(self.template["Resources"][name])
        resource["Properties"] = self.resolve(resource["Properties"])
        return resource
