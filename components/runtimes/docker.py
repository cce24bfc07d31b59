"""The docker runtime: the derived engine image built on its build node and copied to its peers
(components/resources/image.py); every rank in a container of it under systemd."""

from __future__ import annotations

from components.resources.containers import docker_args
from components.resources.image import ContainerImage, ContainerImageArgs, ImageSync, ImageSyncArgs
from components.resources.unit import container_unit_text
from components.runtimes.base import Runtime

SECRETS_IN_CONTAINER = "/run/secrets/blackwell-serving.env"
# The engine's command, run with the NAME=value lines of the secrets file in its environment
# (each line exported as it is: no shell evaluation of a value).
SOURCE_SECRETS = ["/bin/sh", "-c",
                  f'while IFS= read -r kv; do export "$kv"; done < {SECRETS_IN_CONTAINER} && exec "$@"',
                  "engine"]


class DockerRuntime(Runtime):
    def __init__(self, image: ContainerImage, sync: ImageSync | None):
        self.spec, self.tag, self.image_id = image.spec, image.tag, image.image_id
        self.image = image
        self.ready = image.ready.union(sync.ready) if sync else image.ready

    @classmethod
    def place(cls, img, where, nodes, registries, *, key_path, opts):
        built = ContainerImage(img.name, ContainerImageArgs(img, nodes[img.build_node]), opts)
        peers = [nodes[n] for n in img.nodes if n != img.build_node]
        registry = registries.get(img.build_node)
        sync = ImageSync(f"{img.name}-sync", ImageSyncArgs(built, peers, where.fabric, where.state_dir, registry),
                         opts) if peers else None
        if sync and registry:
            registry.fill(built, after=sync.ready.all())
        return cls(built, sync)

    @staticmethod
    def hub_downloader(img):
        return {"downloader_image": img.base, "downloader_python": None}  # engine images carry huggingface_hub

    def rank_unit_text(self, d, fabric, start):
        files: list[tuple[str, str]] = []
        command = start.command
        if start.env_file:
            # The key reaches the engine through a mounted root-only file, read into its
            # environment at start: with `-e NAME` Docker would copy the value into the
            # container's config, where `docker inspect` shows it.
            files.append((start.env_file, SECRETS_IN_CONTAINER))
            command = [*SOURCE_SECRETS, *command]
        return container_unit_text(
            component=start.component, description=start.description, container=start.container, image=self.tag,
            command=command, docker_args=docker_args(d.docker, fabric, list(start.environment), start.mounts, files),
            environment=start.environment, after=start.after, binds_to=start.binds_to, restart=start.restart,
            pre_start=start.pre_start)

    def rank_container(self, container):
        return container
