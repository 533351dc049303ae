"""Backends: where Programs run and where arrays live.

``ref`` is the reference backend (NumPy arrays on host "devices", the eager
interpreter); ``pjrt`` runs Programs on PJRT devices through the native
extension ``refimpl._pjrt``. ``placement`` holds the rules for moving values
between devices (``device_put``) and for choosing where a call runs.
"""
