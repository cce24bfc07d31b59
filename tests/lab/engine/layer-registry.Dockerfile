# The lab's stand-in for Docker Hub's registry:2.8.3 (the lab's nodes reach no Docker Hub): the
# bookworm minbase with the host's Debian docker-registry (Distribution 2.8) and
# layer-registry.yml. Built by prepare.sh regimage (legacy builder). Build argument:
#   BASE  the bookworm minbase root file system imported from debootstrap (see prepare.sh)
ARG BASE
FROM ${BASE}
COPY docker-registry /usr/bin/docker-registry
COPY layer-registry.yml /etc/docker/registry/config.yml
VOLUME /var/lib/registry
EXPOSE 5000
ENTRYPOINT ["/usr/bin/docker-registry", "serve", "/etc/docker/registry/config.yml"]
