"""A test exporter whose artifacts run containers: it records each pod's images as `image`
dependencies (as the kubernetes exporter does for pod templates), for the images exporter's
tests. Not shipped with dr."""

from __future__ import annotations

import json
import os
from typing import Iterator

from dr.contract import ArtifactSink, Discovered, Exporter, ExporterOptions, Ordering, Outcome, OutcomeStatus, RemapKind
from dr.model.artifacts import Dependency

KIND = "pod"


class PodsExporter(Exporter):
    type_name = "pods"
    summary = "pods and the images they run, from a JSON file {pod: [image, ...]}"
    contract_version = 2
    # like the kubernetes exporter: a registry remap rewrites the pods' images
    remap_kinds = (RemapKind("registry", frozenset({"image"}), "old: a registry or an image reference; "
                             "new: where to pull it instead", request_prefix="image-registry:"),)
    ordering = Ordering(frozenset({"cluster-objects"}))

    class Options(ExporterOptions):
        file: str

    def _pods(self) -> dict[str, list[str]]:
        with open(os.path.join(self.context.base_dir, self.options.file)) as handle:
            return json.load(handle)

    def discover(self) -> Iterator[Discovered]:
        for name in self._pods():
            yield Discovered(KIND, name)

    def export(self, sink: ArtifactSink) -> None:
        for name, images in sorted(self._pods().items()):
            sink.write(KIND, name, json.dumps(images).encode(),
                       dependencies=[Dependency("image", image, f"pod {name}") for image in images])

    def restore(self, artifacts, reader, request) -> Iterator[Outcome]:
        """Writes `<to>/<pod>.json` with the pod's images after the request's registry remaps."""
        remaps = {k[len("image-registry:"):]: v for k, v in request.remap.items() if k.startswith("image-registry:")}
        for artifact in artifacts:
            images = [self._image(image, remaps) for image in json.loads(reader.read(artifact))]
            if request.dry_run:
                yield Outcome(artifact.identity, OutcomeStatus.PLANNED, f"would run {images}")
                continue
            os.makedirs(request.to, exist_ok=True)
            with open(os.path.join(request.to, f"{artifact.identity}.json"), "w") as handle:
                json.dump(images, handle)
            yield Outcome(artifact.identity, OutcomeStatus.RESTORED, f"runs {images}")

    @staticmethod
    def _image(image: str, remaps: dict[str, str]) -> str:
        for old, new in sorted(remaps.items(), key=lambda kv: -len(kv[0])):
            if image == old or image.startswith(old.rstrip("/") + "/"):
                return new + image[len(old):]
        return image
