"""Example skills that ship with csi-web (registered in every engine under their names:
``summarize``, ``reply-in-language``, ``language-sections``, ``search-answer``, ``stream-answer``)."""
