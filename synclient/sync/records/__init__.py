"""What a run leaves beside the files: the local index of what synclient wrote (``index``) and the manifests
synapseclient's tooling reads (``manifest``)."""
