"""Images and audio in prompts, through libmtmd (docs/api.md, "Images and audio").

:mod:`~worker.media.sources` reads a media reference (data URI, base64, http(s) URL);
:mod:`~worker.media.content` takes media parts out of chat messages and ``/completion``
prompts; :mod:`~worker.media.projector` owns the projector (engine thread only) and turns a
prompt with media markers into a :class:`~worker.media.prompt.MediaPrompt`, which the batching
engine evaluates into a slot.
"""
