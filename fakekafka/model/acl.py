"""ACLs and an authorizer that decides as Kafka's StandardAuthorizer does (KRaft's, `authorizer.class.name=
org.apache.kafka.metadata.authorizer.StandardAuthorizer`).

Pure state, no I/O: the handlers ask `Authorizer.authorize(principal, host, operation, resource type, name)`.
The rules, read from Kafka's StandardAuthorizerData and Authorizer.authorizeByResourceType:
- a super user (`super.users`, `User:alice;User:bob`) may do anything;
- the ACLs that apply to a resource are the LITERAL ones with its name or `*` and the PREFIXED ones whose name
  starts it; of those, the ones for the principal (or `User:*`) and the host (or `*`) decide: a DENY for the
  operation (or ALL) wins over any ALLOW; an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE and
  ALTER_CONFIGS allows DESCRIBE_CONFIGS (ALLOW only: DENY READ does not deny DESCRIBE);
- no ACL at all on the resource (for anyone): `allow.everyone.if.no.acl.found` decides (default false); ACLs
  there but none for this principal: denied.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

__all__ = [
    "AclBinding", "AclBindingFilter", "AclOperation", "AclPermissionType", "Authorizer", "PatternType",
    "ResourceType", "CLUSTER_NAME", "STANDARD_AUTHORIZER", "parse_principal", "supported_operations",
]

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLUSTER_NAME = "kafka-cluster"
"""The one name of the CLUSTER resource."""
WILDCARD = "*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_O = AclOperation
_IMPLIES = {_O.DESCRIBE: {_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER},
            _O.DESCRIBE_CONFIGS: {_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}}
"""An ALLOW of one of these operations also allows the key (Kafka's IMPLIES_DESCRIBE/IMPLIES_DESCRIBE_CONFIGS)."""

_SUPPORTED = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
                           _O.ALTER, _O.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}


def supported_operations(resource_type: ResourceType) -> tuple[AclOperation, ...]:
    """The operations a resource type has (Kafka's AclEntry.supportedOperations): what `authorized_operations`
    fields are computed over."""
    return _SUPPORTED[resource_type]


def parse_principal(principal: str) -> tuple[str, str]:
    """`Type:name` as Kafka's SecurityUtils.parseKafkaPrincipal reads it; ValueError in its words."""
    kind, sep, name = principal.partition(":")
    if not sep:
        raise ValueError(f"Could not parse principal from `{principal}` (no colon is present separating the "
                         "principal type from the principal name)")
    return kind, name


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    @classmethod
    def of(cls, resource_type: ResourceType | str, resource_name: str, principal: str,
           operation: AclOperation | str, *, permission: AclPermissionType | str = "ALLOW",
           pattern: PatternType | str = "LITERAL", host: str = "*") -> AclBinding:
        """An ACL by Kafka's names: `AclBinding.of("TOPIC", "orders", "User:alice", "READ")`; enum names are
        case-insensitive (kafka-acls' words: `--operation Read`, `--resource-pattern-type prefixed`)."""
        def enum(kind: type[IntEnum], value: object) -> Any:
            return value if isinstance(value, kind) else kind[str(value).upper().replace("-", "_")]
        return cls(enum(ResourceType, resource_type), resource_name, enum(PatternType, pattern), principal, host,
                   enum(AclOperation, operation), enum(AclPermissionType, permission))

    def malformed(self) -> bool:
        """ANY or MATCH where an ACL needs a concrete value: Kafka cannot even build the binding and fails the
        whole CreateAcls request (UNKNOWN_SERVER_ERROR, no message) rather than this ACL."""
        return (self.resource_type == ResourceType.ANY or self.pattern_type in (PatternType.ANY, PatternType.MATCH)
                or self.operation == AclOperation.ANY or self.permission_type == AclPermissionType.ANY)

    def validation_error(self) -> str | None:
        """Why Kafka's controller refuses to store this ACL (INVALID_REQUEST), or None (AclControlManager)."""
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            return f"Invalid resourceType {self.resource_type.name}"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"Invalid patternType {self.pattern_type.name}"
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            return f"Invalid operation {self.operation.name}"
        if self.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
            return f"Invalid permissionType {self.permission_type.name}"
        if not self.resource_name:
            return "Resource name should not be empty"
        return None


@dataclass(frozen=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls match ACLs with: None (or ANY) for a field matches every value; pattern
    type MATCH matches every pattern that applies to the named resource (literal, `*` and prefixes)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if self.resource_name is not None:
            if self.pattern_type in (PatternType.ANY, acl.pattern_type):
                if self.resource_name != acl.resource_name:
                    return False
            elif acl.pattern_type == PatternType.LITERAL:
                if acl.resource_name not in (self.resource_name, WILDCARD):
                    return False
            elif not self.resource_name.startswith(acl.resource_name):
                return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission_type in (AclPermissionType.ANY, acl.permission_type)


def _grants(acl: AclBinding, operation: AclOperation) -> bool:
    """Whether `acl` (for the right principal and host) speaks about `operation` (Kafka's findResult)."""
    if acl.operation == AclOperation.ALL:
        return True
    if acl.permission_type == AclPermissionType.ALLOW and operation in _IMPLIES:
        return acl.operation in _IMPLIES[operation]
    return acl.operation == operation


class Authorizer:
    """The cluster's ACLs and the decisions made with them (insertion-ordered; an ACL is stored once)."""

    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._acls: dict[AclBinding, None] = {}

    @classmethod
    def from_config(cls, super_users: str, allow_everyone: str) -> Authorizer:
        """From Kafka's `super.users` (semicolon-separated principals) and `allow.everyone.if.no.acl.found`."""
        users = [u.strip() for u in (super_users or "").split(";") if u.strip()]
        return cls(users, (allow_everyone or "false").strip().lower() == "true")

    # --- the ACL store ---------------------------------------------------------------------------------
    @property
    def acls(self) -> list[AclBinding]:
        return list(self._acls)

    def create(self, bindings: Iterable[AclBinding]) -> list[str | None]:
        """Stores each valid binding; per binding, None or why it was refused (INVALID_REQUEST's message)."""
        out: list[str | None] = []
        for acl in bindings:
            error = acl.validation_error()
            if error is None:
                try:
                    parse_principal(acl.principal)
                except ValueError as e:
                    error = str(e)
            if error is None:
                self._acls[acl] = None
            out.append(error)
        return out

    def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def delete(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """Removes and returns the ACLs the filter matches."""
        gone = self.describe(acl_filter)
        for acl in gone:
            del self._acls[acl]
        return gone

    # --- decisions -------------------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        """Whether `principal` connected from `host` may do `operation` on the named resource."""
        if principal in self.super_users:
            return True
        return self._decide(principal, host, operation, resource_type, name)

    def _decide(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                name: str) -> bool:
        principals = (principal, "User:*")  # Kafka's wildcard principal is User:* whatever the kind
        found_any = allowed = False
        for acl in self._acls:
            if acl.resource_type != resource_type or not _applies(acl, name):
                continue
            found_any = True
            if acl.principal not in principals or acl.host not in (WILDCARD, host) or not _grants(acl, operation):
                continue
            if acl.permission_type == AclPermissionType.DENY:
                return False
            allowed = True
        return allowed or (not found_any and self.allow_everyone_if_no_acl_found)

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """Whether `principal` may do `operation` on some resource of the type (Kafka's
        Authorizer.authorizeByResourceType: an ALLOW, literal or prefixed, that no DENY covers; used for an
        idempotent producer without IDEMPOTENT_WRITE, which may still write to some topic)."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        for acl in self._acls:
            if acl.resource_type != resource_type or acl.host not in (host, WILDCARD):
                continue
            if acl.principal not in (principal, "User:*") or acl.operation not in (operation, AclOperation.ALL):
                continue
            if acl.permission_type == AclPermissionType.DENY:
                if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                    return False
                deny[acl.pattern_type].add(acl.resource_name)
            elif acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                return True
            else:
                allow[acl.pattern_type].add(acl.resource_name)
        for pattern_type, names in allow.items():
            for name in names:
                if pattern_type == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:i] in deny[PatternType.PREFIXED] for i in range(1, len(name) + 1)):
                    return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """The `authorized_operations` bit field Kafka answers for a resource: bit n set for each supported
        operation of code n the principal may do."""
        bits = 0
        for op in supported_operations(resource_type):
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << op
        return bits


def _applies(acl: AclBinding, name: str) -> bool:
    if acl.pattern_type == PatternType.LITERAL:
        return acl.resource_name in (name, WILDCARD)
    return acl.pattern_type == PatternType.PREFIXED and name.startswith(acl.resource_name)
