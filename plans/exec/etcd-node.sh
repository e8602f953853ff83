#!/bin/sh
# Starts one etcd 3.4 member for faultline's exec adapter (plans/exec-etcd.yaml): turns faultline's template
# variables into etcd's static-bootstrap flags. A team testing its own system writes a wrapper like this when its
# command line wants the cluster in another shape than `{peers}` (ID=HOST:PORT,... of the other nodes).
#   etcd-node.sh NAME DATA_DIR CLIENT_ADDR PEER_ADDR PEERS
set -eu
name=$1 data_dir=$2 client_addr=$3 peer_addr=$4 peers=$5
cluster="$name=http://$peer_addr"
old_ifs=$IFS
IFS=,
for peer in $peers; do
  id=${peer%%=*}
  cluster="$cluster,n$((id + 1))=http://${peer#*=}"
done
IFS=$old_ifs
exec "${ETCD:-etcd}" --name "$name" --data-dir "$data_dir" \
  --listen-client-urls "http://$client_addr" --advertise-client-urls "http://$client_addr" \
  --listen-peer-urls "http://$peer_addr" --initial-advertise-peer-urls "http://$peer_addr" \
  --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token faultline-exec \
  --logger zap --log-outputs stderr
