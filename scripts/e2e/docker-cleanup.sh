#!/usr/bin/env bash
# Removes what the container fault-injection suite (e2e/dockercluster) left
# behind when its test process was killed before its cleanup ran: the
# containers, networks and images labelled drover-e2e. Each run removes its
# own on exit, so this is only needed after a crash. Pass a run's prefix
# (drover-e2e-1a2b3c4d) to remove that run only; without one it removes
# every run's, so do not use it while a suite is running.
set -euo pipefail

filter="label=drover-e2e"
if [[ $# -gt 0 ]]; then
  filter="label=drover-e2e=$1"
fi

containers=$(docker ps -aq --filter "$filter")
if [[ -n "$containers" ]]; then
  docker rm -f $containers >/dev/null
  echo "removed containers: $(echo $containers | wc -w)"
fi
networks=$(docker network ls -q --filter "$filter")
if [[ -n "$networks" ]]; then
  docker network rm $networks >/dev/null
  echo "removed networks: $(echo $networks | wc -w)"
fi
images=$(docker images -q --filter "$filter" | sort -u)
if [[ -n "$images" ]]; then
  docker rmi -f $images >/dev/null
  echo "removed images: $(echo $images | wc -w)"
fi
