"""The control plane: everything that speaks the platform's REST API.

``rest`` (:class:`~synclient.platform.rest.Platform`, the typed REST client), ``gate`` (the one admission gate every
REST call of a process passes), ``models`` (the wire objects, parsed), ``credentials`` (where the platform is and who
we are: endpoints, tokens, profiles) and ``tls`` (which certificate authorities both planes trust).
"""
