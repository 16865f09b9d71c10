"""The write room: everything between a run's queue and its stores: the typed queue entries and their byte budget
(``entries``), the writer thread (``writer``), validated rows and columns (``convert``, ``values``), the store that
is never given up on (``storelink``) and one thread per logger (``fanout``)."""
