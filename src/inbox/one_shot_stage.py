# A one-shot run's rich-output entries staged as files for the host, and the trailer line that counts
# them: appended to rich_output.py inside the one-shot prelude's _LSB_RICH string
# (scheduler/driver/rich_output_source.cc); runs inside the box. Must hold no '''.
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)

def _lsb_stage(stage, token, entries):
    import os, sys
    try:
        os.makedirs(stage, 0o700, exist_ok=True)
        for i, e in enumerate(entries):
            fd = os.open('%s/%04d.json' % (stage, i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                view = memoryview(e.encode('utf-8', 'surrogateescape'))
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        sys.stderr.flush()
        os.write(2, ('\x1e%s outputs %d\n' % (token, len(entries))).encode())
    except OSError as e:
        sys.stderr.flush()
        os.write(2, ('\x1e%s outputs 0 %s\n' % (token, e)).encode())
