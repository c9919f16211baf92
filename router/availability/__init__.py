"""Whether a model can be had: why not (the scheduling domain errors), which may not start
for a while (load holds), which a catalogue reload stops."""
