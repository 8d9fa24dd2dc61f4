"""``/emulator/...`` over HTTP: stats, knobs, seeding and live mutations for tests."""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict

from .admin import Admin, content_from_json
from .routes import ApiError, Request, Response
from .seed import SpecError, seed_spec
from .store import NameConflict


class AdminRoutes:
    """``/emulator/...``: stats, knobs and live mutations. No token, not counted in stats."""

    def __init__(self, context, admin: Admin, on_info: Callable[[], dict]) -> None:
        self.context = context
        self.admin = admin
        self.on_info = on_info

    def handle(self, method: str, path: str, query: Dict[str, str], body: bytes) -> Response:
        request = Request(method, path, query, body, None, ())
        try:
            return self._handle(method, path, query, request)
        except (KeyError, LookupError) as error:
            raise ApiError(404, str(error.args[0] if error.args else error)) from None
        except NameConflict as error:
            raise ApiError(409, str(error)) from None
        except (ValueError, TypeError, SpecError) as error:
            raise ApiError(400, str(error)) from None

    def _handle(self, method: str, path: str, query: Dict[str, str], request: Request) -> Response:
        segments = [s for s in path.split("/") if s][1:]  # drop "emulator"
        key = (method, "/".join(segments))
        if key == ("GET", "stats"):
            return Response(body=self.context.stats.snapshot())
        if key == ("POST", "stats/reset"):
            self.context.stats.reset()
            return Response(body={})
        if key == ("GET", "exchanges"):
            return Response(body=[dataclasses.asdict(exchange) for exchange in self.context.exchanges.snapshot()])
        if key == ("GET", "info"):
            return Response(body=self.on_info())
        if key == ("GET", "knobs"):
            return Response(body=_knobs_json(self.context.knobs))
        if key == ("POST", "knobs"):
            return Response(body=_knobs_json(self.context.set_knobs(**request.json())))
        if key == ("POST", "seed"):
            return Response(status=201, body={"projects": seed_spec(self.context.store, request.json())})
        if key == ("GET", "resolve"):
            return Response(body={"id": self.admin.resolve(query.get("project", ""), query.get("path", ""))})
        if key == ("POST", "file"):
            data = request.json()
            content = content_from_json(data)
            entity_id = self.admin.add_file(
                data["parentId"],
                data["name"],
                b"" if content is None else content,
                file_name=data.get("file_name"),
                names=data.get("names", "synapse"),
            )
            return Response(status=201, body={"id": entity_id})
        if key == ("POST", "views/refresh"):
            return Response(body={"refreshed": self.admin.refresh_views(request.json().get("id"))})
        if key == ("POST", "views/finish_builds"):
            return Response(body={"finished": self.context.view_builds.finish_all()})
        if key == ("GET", "views/building"):
            return Response(body={"building": self.context.view_builds.pending()})
        if key == ("GET", "trash"):
            return Response(body={"trash": self.admin.trash()})
        if method == "GET" and len(segments) == 3 and segments[0] == "project" and segments[2] == "entities":
            return Response(body={"entities": self.admin.project_entities(segments[1])})
        if key == ("POST", "folder"):
            data = request.json()
            return Response(
                status=201,
                body={"id": self.admin.add_folder(data["parentId"], data["name"], names=data.get("names", "synapse"))},
            )
        if method == "POST" and len(segments) == 3 and segments[0] == "entity":
            return self._entity_action(segments[1], segments[2], request.json())
        raise ApiError(404, f"No such emulator route: {method} {path}")

    def _entity_action(self, entity_ref: str, action: str, data: dict) -> Response:
        if action == "version":
            content = content_from_json(data)
            if content is None:
                raise ApiError(400, 'give "content", "content_b64" or "size" (+"seed")')
            return Response(
                status=201,
                body={"versionNumber": self.admin.add_version(entity_ref, content, file_name=data.get("file_name"))},
            )
        if action == "delete":
            self.admin.delete_entity(entity_ref)
        elif action == "rename":
            self.admin.rename_entity(entity_ref, data["name"], names=data.get("names", "synapse"))
        elif action == "move":
            self.admin.move_entity(entity_ref, data["parentId"])
        elif action == "annotation":
            self.admin.set_annotation(entity_ref, data["key"], data.get("values"))
        elif action == "created_on":
            self.admin.set_created_on(entity_ref, data["createdOn"])
        else:
            raise ApiError(404, f"Unknown entity action: {action}")
        return Response(body={})


def _knobs_json(knobs) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(knobs).items()}
